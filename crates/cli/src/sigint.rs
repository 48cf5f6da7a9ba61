//! Ctrl-C: the first stops the run at its next slice (the caller polls the
//! flag), a second kills at once (SA_RESETHAND restores the default).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Install the handler (once-only: SA_RESETHAND) and return its flag.
pub fn install() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe; the sigaction struct is zeroed and then filled.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
    &INTERRUPTED
}
