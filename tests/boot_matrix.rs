//! Boot matrix: both guest images on 1 and 4 harts, each running a workload
//! that counts the processors Linux brought up and exits with a status of
//! its own; hartscope must exit with that status after Linux powered off.

use crate::support;

use support::*;

fn boot(image_name: &str, smp: usize, status: i32) {
    let _ = image(image_name);
    let dir = Scratch::new(&format!("matrix-{image_name}-{smp}"));
    // The count is computed in the guest, so an echo of the script cannot match.
    let script = dir.write(
        "run.sh",
        format!("n=$(grep -c '^processor' /proc/cpuinfo)\necho \"matrix: processors=$n\"\nexit {status}\n"),
    );
    let stats = dir.path("stats.json");
    let out = hartscope(
        &[
            "boot",
            "--image",
            image_name,
            "--smp",
            &smp.to_string(),
            "--workload",
            script.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, status);
    let console = out.stdout_text();
    let expected = format!("matrix: processors={smp}");
    assert!(
        console.lines().any(|l| l.trim_end() == expected),
        "`{expected}` missing:\n{}",
        out.tail()
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let harts = json["harts"].as_array().expect("harts in stats");
    assert_eq!(harts.len(), smp, "one stats entry per hart");
    for h in harts {
        assert!(
            h["instret"].as_u64().unwrap() > 100_000,
            "every hart ran Linux: {h}"
        );
    }
    assert_eq!(json["exit_status"].as_i64(), Some(status as i64));
}

#[test]
fn debian_on_1_hart() {
    boot("debian", 1, 11);
}

#[test]
fn debian_on_4_harts() {
    boot("debian", 4, 14);
}

#[test]
fn custom_on_1_hart() {
    boot("custom", 1, 21);
}

#[test]
fn custom_on_4_harts() {
    boot("custom", 4, 24);
}
