//! Boot the `debian` guest image (stock OpenSBI 1.6, Debian's 6.12 kernel,
//! BusyBox) to a workload and back. Needs the image built by
//! `hartscope guest build --image debian`; without it the test fails and says
//! which command builds it.

use hs_machine::{BootFile, BootImages, Machine, MachineConfig, StopReason};

#[test]
fn debian_image_runs_a_workload_and_reports_its_status() {
    let image = hs_guest::find("debian").unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("hs-linux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("run.sh");
    // Also move the UART interrupt to hart 1 as a user would (smp_affinity):
    // the PLIC must route by its enable bits.
    let run = "echo workload-says-hi\n\
               hsmark phase measured\n\
               irq=$(grep ttyS0 /proc/interrupts | cut -d: -f1 | tr -d ' ')\n\
               echo 2 > /proc/irq/$irq/smp_affinity\n\
               for i in 1 2 3 4 5 6; do echo moving the console interrupt $i; done\n\
               cat /proc/interrupts\n\
               exit 7\n";
    std::fs::write(&script, run).unwrap();
    let initrd = hs_guest::workload_initrd(&image, &script).unwrap();
    let cfg = MachineConfig {
        harts: 2,
        ram_bytes: 512 << 20,
        bootargs: image.default_append.clone(),
        images: BootImages {
            firmware: Some(BootFile::read("firmware", &image.firmware).unwrap()),
            kernel: Some(BootFile::read("kernel", &image.kernel).unwrap()),
            initrd: Some(BootFile::from_bytes("initrd+workload", initrd)),
        },
        max_cycles: Some(20_000_000_000),
        ..MachineConfig::default()
    };
    let mut m = Machine::new(cfg).unwrap();
    let stop = m.run();
    let console = String::from_utf8_lossy(m.console_output()).into_owned();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stop, StopReason::PowerOff, "console:\n{console}");
    assert!(console.contains("OpenSBI v"), "{console}");
    assert!(console.contains("Run /init as init process"), "{console}");
    assert!(console.contains("workload-says-hi"), "{console}");
    assert!(
        console.contains("SiFive PLIC  10"),
        "UART interrupt through the PLIC:\n{console}"
    );
    assert_eq!(m.markers().exit_status, Some(7));
    let labels: Vec<&str> = m
        .markers()
        .phases
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert!(labels.contains(&"measured"), "{labels:?}");
    let claims = |name: &str| {
        m.device_stats()
            .iter()
            .find(|s| s.name == name)
            .map_or(0, |s| s.value)
    };
    assert!(
        claims("plic.hart1.s.claims") > 0,
        "UART interrupts reached hart 1 after smp_affinity:\n{console}"
    );
    let s = m.summary();
    assert!(
        s.harts.iter().all(|h| h.instret > 1_000_000),
        "both harts ran Linux: {:?}",
        s.harts
    );
}
