//! CSR numbers and their names (as GNU objdump prints them).

macro_rules! csrs {
    ($( $c:ident = $n:literal, $name:literal; )*) => {
        $( pub const $c: u16 = $n; )*
        /// Name of a CSR with a fixed name (counters and PMP ranges are handled in [`csr_name`]).
        fn fixed_name(num: u16) -> Option<&'static str> {
            match num { $( $n => Some($name), )* _ => None }
        }
        const FIXED: &[(u16, &str)] = &[ $( ($n, $name), )* ];
    };
}

csrs! {
    USTATUS = 0x000, "ustatus";
    UIE = 0x004, "uie";
    UTVEC = 0x005, "utvec";
    USCRATCH = 0x040, "uscratch";
    UEPC = 0x041, "uepc";
    UCAUSE = 0x042, "ucause";
    UTVAL = 0x043, "utval";
    UIP = 0x044, "uip";
    SSTATEEN0 = 0x10c, "sstateen0";
    SSTATEEN1 = 0x10d, "sstateen1";
    SSTATEEN2 = 0x10e, "sstateen2";
    SSTATEEN3 = 0x10f, "sstateen3";
    SISELECT = 0x150, "siselect";
    SIREG = 0x151, "sireg";
    STOPEI = 0x15c, "stopei";
    STOPI = 0xdb0, "stopi";
    SCOUNTOVF = 0xda0, "scountovf";
    MVIEN = 0x308, "mvien";
    MVIP = 0x309, "mvip";
    MSTATEEN0 = 0x30c, "mstateen0";
    MSTATEEN1 = 0x30d, "mstateen1";
    MSTATEEN2 = 0x30e, "mstateen2";
    MSTATEEN3 = 0x30f, "mstateen3";
    MISELECT = 0x350, "miselect";
    MIREG = 0x351, "mireg";
    MTOPEI = 0x35c, "mtopei";
    MTOPI = 0xfb0, "mtopi";
    FFLAGS = 0x001, "fflags";
    FRM = 0x002, "frm";
    FCSR = 0x003, "fcsr";
    VSTART = 0x008, "vstart";
    VXSAT = 0x009, "vxsat";
    VXRM = 0x00a, "vxrm";
    VCSR = 0x00f, "vcsr";
    SEED = 0x015, "seed";
    CYCLE = 0xc00, "cycle";
    TIME = 0xc01, "time";
    INSTRET = 0xc02, "instret";
    VL = 0xc20, "vl";
    VTYPE = 0xc21, "vtype";
    VLENB = 0xc22, "vlenb";
    CYCLEH = 0xc80, "cycleh";
    TIMEH = 0xc81, "timeh";
    INSTRETH = 0xc82, "instreth";
    SSTATUS = 0x100, "sstatus";
    SIE = 0x104, "sie";
    STVEC = 0x105, "stvec";
    SCOUNTEREN = 0x106, "scounteren";
    SENVCFG = 0x10a, "senvcfg";
    SSCRATCH = 0x140, "sscratch";
    SEPC = 0x141, "sepc";
    SCAUSE = 0x142, "scause";
    STVAL = 0x143, "stval";
    SIP = 0x144, "sip";
    STIMECMP = 0x14d, "stimecmp";
    STIMECMPH = 0x15d, "stimecmph";
    SATP = 0x180, "satp";
    SCONTEXT = 0x5a8, "scontext";
    VSSTATUS = 0x200, "vsstatus";
    VSIE = 0x204, "vsie";
    VSTVEC = 0x205, "vstvec";
    VSSCRATCH = 0x240, "vsscratch";
    VSEPC = 0x241, "vsepc";
    VSCAUSE = 0x242, "vscause";
    VSTVAL = 0x243, "vstval";
    VSIP = 0x244, "vsip";
    VSATP = 0x280, "vsatp";
    HSTATUS = 0x600, "hstatus";
    HEDELEG = 0x602, "hedeleg";
    HIDELEG = 0x603, "hideleg";
    HIE = 0x604, "hie";
    HTIMEDELTA = 0x605, "htimedelta";
    HCOUNTEREN = 0x606, "hcounteren";
    HGEIE = 0x607, "hgeie";
    HENVCFG = 0x60a, "henvcfg";
    HTVAL = 0x643, "htval";
    HIP = 0x644, "hip";
    HVIP = 0x645, "hvip";
    HTINST = 0x64a, "htinst";
    HGATP = 0x680, "hgatp";
    HGEIP = 0xe12, "hgeip";
    MVENDORID = 0xf11, "mvendorid";
    MARCHID = 0xf12, "marchid";
    MIMPID = 0xf13, "mimpid";
    MHARTID = 0xf14, "mhartid";
    MCONFIGPTR = 0xf15, "mconfigptr";
    MSTATUS = 0x300, "mstatus";
    MISA = 0x301, "misa";
    MEDELEG = 0x302, "medeleg";
    MIDELEG = 0x303, "mideleg";
    MIE = 0x304, "mie";
    MTVEC = 0x305, "mtvec";
    MCOUNTEREN = 0x306, "mcounteren";
    MENVCFG = 0x30a, "menvcfg";
    MSTATUSH = 0x310, "mstatush";
    MENVCFGH = 0x31a, "menvcfgh";
    MCOUNTINHIBIT = 0x320, "mcountinhibit";
    MSCRATCH = 0x340, "mscratch";
    MEPC = 0x341, "mepc";
    MCAUSE = 0x342, "mcause";
    MTVAL = 0x343, "mtval";
    MIP = 0x344, "mip";
    MTINST = 0x34a, "mtinst";
    MTVAL2 = 0x34b, "mtval2";
    MSECCFG = 0x747, "mseccfg";
    MCYCLE = 0xb00, "mcycle";
    MINSTRET = 0xb02, "minstret";
    MCYCLEH = 0xb80, "mcycleh";
    MINSTRETH = 0xb82, "minstreth";
    TSELECT = 0x7a0, "tselect";
    TDATA1 = 0x7a1, "tdata1";
    TDATA2 = 0x7a2, "tdata2";
    TDATA3 = 0x7a3, "tdata3";
    TINFO = 0x7a4, "tinfo";
    TCONTROL = 0x7a5, "tcontrol";
    MCONTEXT = 0x7a8, "mcontext";
    DCSR = 0x7b0, "dcsr";
    DPC = 0x7b1, "dpc";
    DSCRATCH0 = 0x7b2, "dscratch0";
    DSCRATCH1 = 0x7b3, "dscratch1";
}

/// First of the 16 `pmpcfg` CSRs (only even numbers exist on RV64).
pub const PMPCFG0: u16 = 0x3a0;
/// First of the 64 `pmpaddr` CSRs.
pub const PMPADDR0: u16 = 0x3b0;
/// `hpmcounter3` (user read-only shadow); `hpmcounterN` = this + N - 3.
pub const HPMCOUNTER3: u16 = 0xc03;
pub const MHPMCOUNTER3: u16 = 0xb03;
pub const MHPMEVENT3: u16 = 0x323;

/// Name of a CSR, `None` if it has none. Numbered families are spelled out
/// into a static string table on first use.
pub fn csr_name(num: u16) -> Option<&'static str> {
    if let Some(n) = fixed_name(num) {
        return Some(n);
    }
    numbered(num).map(|(fam, i)| numbered_table()[fam][i])
}

/// CSR number of a name, e.g. `"mstatus"` or `"pmpaddr12"`.
pub fn csr_by_name(name: &str) -> Option<u16> {
    if let Some(&(n, _)) = FIXED.iter().find(|(_, s)| *s == name) {
        return Some(n);
    }
    (0..=0xfffu16).find(|&n| numbered(n).is_some() && csr_name(n) == Some(name))
}

/// Families of numbered CSRs: (prefix, first number, first index, count, suffix).
const FAMILIES: &[(&str, u16, usize, usize, &str)] = &[
    ("pmpcfg", PMPCFG0, 0, 16, ""),
    ("pmpaddr", PMPADDR0, 0, 64, ""),
    ("hpmcounter", HPMCOUNTER3, 3, 29, ""),
    ("hpmcounter", 0xc83, 3, 29, "h"),
    ("mhpmcounter", MHPMCOUNTER3, 3, 29, ""),
    ("mhpmcounter", 0xb83, 3, 29, "h"),
    ("mhpmevent", MHPMEVENT3, 3, 29, ""),
];

fn numbered(num: u16) -> Option<(usize, usize)> {
    FAMILIES
        .iter()
        .enumerate()
        .find_map(|(f, &(_, first, _, count, _))| {
            (num >= first && ((num - first) as usize) < count).then(|| (f, (num - first) as usize))
        })
}

fn numbered_table() -> &'static Vec<Vec<&'static str>> {
    static TABLE: std::sync::OnceLock<Vec<Vec<&'static str>>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        FAMILIES
            .iter()
            .map(|&(prefix, _, idx0, count, suffix)| {
                (0..count)
                    .map(|i| &*Box::leak(format!("{prefix}{}{suffix}", idx0 + i).into_boxed_str()))
                    .collect()
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (num, name) in [
            (0x300, "mstatus"),
            (0x3a2, "pmpcfg2"),
            (0x3bf, "pmpaddr15"),
            (0x3ef, "pmpaddr63"),
            (0xc03, "hpmcounter3"),
            (0xc1f, "hpmcounter31"),
            (0xb1f, "mhpmcounter31"),
            (0x33f, "mhpmevent31"),
            (0xc9f, "hpmcounter31h"),
            (0x14d, "stimecmp"),
        ] {
            assert_eq!(csr_name(num), Some(name), "{num:#x}");
            assert_eq!(csr_by_name(name), Some(num), "{name}");
        }
        assert_eq!(csr_name(0x7c0), None);
        assert_eq!(csr_name(0xc20), Some("vl"));
        assert_eq!(csr_by_name("nosuch"), None);
    }
}
