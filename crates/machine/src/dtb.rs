//! The flattened device tree, generated from the devices actually present
//! on the board (each device describes its own node) plus the CPUs,
//! memory and `/chosen`.

use hs_devices::{FdtNode, Placement, Prop};
use vm_fdt::FdtWriter;

use crate::error::MachineError;
use crate::layout::TIMEBASE_HZ;

/// What the tree says besides the devices.
#[derive(Clone, Debug)]
pub struct DtbParams {
    pub harts: usize,
    pub ram_base: u64,
    pub ram_size: u64,
    pub bootargs: String,
    pub initrd: Option<(u64, u64)>,
    /// Path of the console node for `stdout-path`.
    pub stdout_path: String,
    /// Seed for `/chosen/rng-seed`: the guest's early entropy, fixed so runs repeat.
    pub rng_seed: u64,
    pub isa: String,
    pub isa_extensions: Vec<String>,
    /// Events the timing model counts on the hpm counters.
    pub hpm_events: Vec<u64>,
    pub mmu_type: String,
}

/// Phandles of the CPUs: cpu h = 1 + 2h, its interrupt controller = 2 + 2h.
/// The board hands out the ones from [`first_device_phandle`] on.
pub fn phandles(harts: usize) -> (Vec<u32>, Vec<u32>) {
    let n = harts as u32;
    (
        (0..n).map(|h| 1 + 2 * h).collect(),
        (0..n).map(|h| 2 + 2 * h).collect(),
    )
}

/// First phandle after the CPUs'.
pub fn first_device_phandle(harts: usize) -> u32 {
    2 * harts as u32 + 1
}

fn rng_seed(seed: u64) -> Vec<u8> {
    // splitmix64: a fixed expansion of the seed into 32 bytes.
    let mut x = seed;
    (0..4)
        .flat_map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)).to_le_bytes()
        })
        .collect()
}

fn write_prop(w: &mut FdtWriter, name: &str, p: &Prop) -> Result<(), MachineError> {
    match p {
        Prop::Empty => w.property_null(name)?,
        Prop::U32(v) => w.property_u32(name, *v)?,
        Prop::U32s(v) => w.property_array_u32(name, v)?,
        Prop::U64(v) => w.property_u64(name, *v)?,
        Prop::Str(s) => w.property_string(name, s)?,
        Prop::Strs(v) => w.property_string_list(name, v.clone())?,
        Prop::Bytes(b) => w.property(name, b)?,
    }
    Ok(())
}

fn write_node(w: &mut FdtWriter, n: &FdtNode) -> Result<(), MachineError> {
    let node = w.begin_node(&n.name)?;
    for (name, p) in &n.props {
        write_prop(w, name, p)?;
    }
    for c in &n.children {
        write_node(w, c)?;
    }
    w.end_node(node)?;
    Ok(())
}

/// The `riscv,pmu` node OpenSBI reads to map SBI PMU events to counters:
/// cycles and instructions on `mcycle`/`minstret`, and every event the
/// machine's timing model counts (`events`, from
/// `TimingModel::hpm_events`) on `mhpmcounter3..31`. The selector written
/// to `mhpmeventN` is the event index itself (OpenSBI's default when the
/// node has no `riscv,event-to-mhpmevent`). Raw events (`perf -e rN`) of
/// those selectors go to the same counters with N as the selector. An event
/// the model does not count is not listed, so OpenSBI refuses it and `perf
/// stat` prints `<not supported>` rather than a 0 that looks measured.
fn pmu_node(events: &[u64]) -> FdtNode {
    use hs_timing::event;
    const HPM_COUNTERS: u32 = 0xffff_fff8;
    // Cycles and instructions also go to the programmable counters when the
    // model counts them there: with Sscofpmf OpenSBI then prefers one, and
    // only those can raise an overflow interrupt (`perf record -e cycles`).
    let hpm = |e: u64| if events.contains(&e) { HPM_COUNTERS } else { 0 };
    let mut map = vec![
        event::CPU_CYCLES as u32,
        event::CPU_CYCLES as u32,
        1 << 0 | hpm(event::CPU_CYCLES),
    ];
    map.extend([
        event::INSTRUCTIONS as u32,
        event::INSTRUCTIONS as u32,
        1 << 2 | hpm(event::INSTRUCTIONS),
    ]);
    for e in events
        .iter()
        .filter(|&&e| e != event::CPU_CYCLES && e != event::INSTRUCTIONS)
    {
        map.extend([*e as u32, *e as u32, HPM_COUNTERS]);
    }
    let raw: Vec<u32> = events
        .iter()
        .flat_map(|&e| [0, e as u32, u32::MAX, u32::MAX, HPM_COUNTERS])
        .collect();
    let node = FdtNode::new("pmu")
        .str("compatible", "riscv,pmu")
        .prop("riscv,event-to-mhpmcounters", Prop::U32s(map));
    if raw.is_empty() {
        node
    } else {
        // <select hi, lo, mask hi, lo, counters>: each selector exactly
        node.prop("riscv,raw-event-to-mhpmcounters", Prop::U32s(raw))
    }
}

/// Build the DTB. `devices` are the nodes each device described itself with.
pub fn build(
    p: &DtbParams,
    devices: &[Vec<(Placement, FdtNode)>],
) -> Result<Vec<u8>, MachineError> {
    let (cpu_ph, cpu_intc) = phandles(p.harts);
    let mut root = FdtNode::new("")
        .u32("#address-cells", 2)
        .u32("#size-cells", 2)
        .str("compatible", "riscv-virtio")
        .str("model", "riscv-virtio,qemu");

    let mut chosen = FdtNode::new("chosen")
        .str("stdout-path", &p.stdout_path)
        .prop("rng-seed", Prop::Bytes(rng_seed(p.rng_seed)));
    if !p.bootargs.is_empty() {
        chosen = chosen.str("bootargs", &p.bootargs);
    }
    if let Some((start, end)) = p.initrd {
        chosen = chosen
            .prop("linux,initrd-start", Prop::U64(start))
            .prop("linux,initrd-end", Prop::U64(end));
    }
    root = root.child(chosen);

    for nodes in devices {
        for (place, n) in nodes {
            if *place == Placement::Root {
                root = root.child(n.clone());
            }
        }
    }

    root = root.child(pmu_node(&p.hpm_events));
    root = root.child(
        FdtNode::new(format!("memory@{:x}", p.ram_base))
            .str("device_type", "memory")
            .reg(p.ram_base, p.ram_size),
    );

    let mut cpus = FdtNode::new("cpus")
        .u32("#address-cells", 1)
        .u32("#size-cells", 0)
        .u32("timebase-frequency", TIMEBASE_HZ as u32);
    let exts: Vec<&str> = p.isa_extensions.iter().map(String::as_str).collect();
    let mut cluster = FdtNode::new("cluster0");
    for h in 0..p.harts {
        let intc = FdtNode::new("interrupt-controller")
            .u32("#interrupt-cells", 1)
            .empty("interrupt-controller")
            .str("compatible", "riscv,cpu-intc")
            .u32("phandle", cpu_intc[h]);
        cpus = cpus.child(
            FdtNode::new(format!("cpu@{h:x}"))
                .u32("phandle", cpu_ph[h])
                .str("device_type", "cpu")
                .u32("reg", h as u32)
                .str("status", "okay")
                .str("compatible", "riscv")
                .str("riscv,isa", &p.isa)
                .str("riscv,isa-base", "rv64i")
                .strs("riscv,isa-extensions", &exts)
                .str("mmu-type", &p.mmu_type)
                .child(intc),
        );
        cluster = cluster.child(FdtNode::new(format!("core{h}")).u32("cpu", cpu_ph[h]));
    }
    cpus = cpus.child(FdtNode::new("cpu-map").child(cluster));
    root = root.child(cpus);

    let mut soc = FdtNode::new("soc")
        .u32("#address-cells", 2)
        .u32("#size-cells", 2)
        .str("compatible", "simple-bus")
        .empty("ranges");
    for nodes in devices {
        for (place, n) in nodes {
            if *place == Placement::Soc {
                soc = soc.child(n.clone());
            }
        }
    }
    root = root.child(soc);

    let mut w = FdtWriter::new()?;
    write_node(&mut w, &root)?;
    Ok(w.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmu_node_maps_every_model_event() {
        let n = pmu_node(&hs_timing::event::SUPPORTED);
        let Some((_, Prop::U32s(map))) = n
            .props
            .iter()
            .find(|(k, _)| k == "riscv,event-to-mhpmcounters")
        else {
            panic!("no event map")
        };
        assert_eq!(map.len(), 3 * hs_timing::event::SUPPORTED.len());
        assert_eq!(&map[..6], &[1, 1, 0xffff_fff9, 2, 2, 0xffff_fffc]);
        assert!(map
            .chunks(3)
            .skip(2)
            .all(|t| t[0] == t[1] && t[2] == 0xffff_fff8));
        let Some((_, Prop::U32s(raw))) = n
            .props
            .iter()
            .find(|(k, _)| k == "riscv,raw-event-to-mhpmcounters")
        else {
            panic!("no raw event map")
        };
        assert_eq!(raw.len(), 5 * hs_timing::event::SUPPORTED.len());
        assert_eq!(&raw[5..10], &[0, 2, u32::MAX, u32::MAX, 0xffff_fff8]);
    }
    #[test]
    fn a_model_without_hpm_events_advertises_only_the_fixed_counters() {
        let n = pmu_node(&[]);
        let Some((_, Prop::U32s(map))) = n
            .props
            .iter()
            .find(|(k, _)| k == "riscv,event-to-mhpmcounters")
        else {
            panic!("no event map")
        };
        assert_eq!(map, &vec![1, 1, 1, 2, 2, 4]);
        assert!(n.get("riscv,raw-event-to-mhpmcounters").is_none());
    }

    #[test]
    fn rng_seed_is_fixed_per_seed() {
        assert_eq!(rng_seed(0), rng_seed(0));
        assert_ne!(rng_seed(0), rng_seed(1));
        assert_eq!(rng_seed(7).len(), 32);
    }
}
