//! Boots each guest image under Debian's `qemu-system-riscv64 -M virt` with a
//! small workload and checks the console: the workload's output, the agent's
//! status line and Linux's power-off. This proves the images independently
//! of hartscope's own emulator (QEMU treats the marker HINT as a no-op).
//! An image that is not built fails the test with the command that builds it.

use std::path::PathBuf;
use std::time::Duration;

use hs_guest::qemu::QemuBoot;

const WORKLOAD: &str = "\
hsmark phase x
echo \"guest-qemu-token-$((6 * 7))\"
uname -r
exit 3
";

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "hartscope-guest-qemu-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn boot_with_workload(name: &str) {
    let image = hs_guest::find(name).unwrap_or_else(|e| panic!("{e}"));
    let manifest = image.read_manifest().unwrap_or_else(|e| panic!("{e}"));
    let dir = scratch_dir(name);
    let script = dir.join("run.sh");
    std::fs::write(&script, WORKLOAD).unwrap();
    let initrd = dir.join("initrd");
    std::fs::write(&initrd, hs_guest::workload_initrd(&image, &script).unwrap()).unwrap();

    let boot = QemuBoot {
        firmware: &image.firmware,
        kernel: &image.kernel,
        initrd: &initrd,
        append: &image.default_append,
        smp: 2,
        memory_mib: 512,
        timeout: Duration::from_secs(300),
        console_log: dir.join("console.log"),
        disk: None,
        user_net: false,
    };
    let result = boot.run().unwrap_or_else(|e| panic!("{e}"));
    let tail: String = {
        let lines: Vec<&str> = result.console.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    assert!(
        result.exited,
        "image `{name}`: QEMU did not power off within 300 s; console ends:\n{tail}"
    );
    let lines: Vec<&str> = result.console.lines().map(str::trim_end).collect();
    // The token is computed by the guest shell, so an echo of the script cannot match.
    assert!(
        lines.contains(&"guest-qemu-token-42"),
        "image `{name}`: workload output missing; console ends:\n{tail}"
    );
    assert!(
        lines.contains(&manifest.kernel_release.as_str()),
        "image `{name}`: `uname -r` did not print {}; console ends:\n{tail}",
        manifest.kernel_release
    );
    assert!(
        lines.contains(&"hartscope-agent: workload exited with status 3"),
        "image `{name}`: agent status line missing or wrong; console ends:\n{tail}"
    );
    assert!(
        result.console.contains("reboot: Power down"),
        "image `{name}`: Linux did not power down; console ends:\n{tail}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debian_image_boots_under_qemu() {
    boot_with_workload("debian");
}

#[test]
fn custom_image_boots_under_qemu() {
    boot_with_workload("custom");
}
