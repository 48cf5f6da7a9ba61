//! Interrupt affinity as a user sets it: on 2 harts, move the UART's
//! interrupt to CPU1 through /proc/irq/N/smp_affinity, print to the console,
//! and check from two /proc/interrupts snapshots that only CPU1 took the
//! console's interrupts afterwards.

use crate::support;

use support::*;

/// Snapshots are kept in shell variables and printed only after the second
/// one, so printing them cannot add interrupts in between.
const WORKLOAD: &str = r#"irq=$(grep ttyS0 /proc/interrupts | cut -d: -f1 | tr -d ' ')
echo 2 > /proc/irq/$irq/smp_affinity
affinity=$(cat /proc/irq/$irq/smp_affinity)
before=$(grep ttyS0 /proc/interrupts)
i=0
while [ $i -lt 20 ]; do
    echo "console line $i after moving the UART interrupt to CPU1"
    i=$((i + 1))
done
after=$(grep ttyS0 /proc/interrupts)
echo "irq-affinity:$affinity"
echo "irq-before:$before"
echo "irq-after:$after"
exit 0
"#;

/// The per-CPU counts of a `/proc/interrupts` line (` 12:   3   1  SiFive PLIC  10 Edge  ttyS0`).
fn per_cpu(line: &str, cpus: usize) -> Vec<u64> {
    let (_, rest) = line
        .split_once(':')
        .unwrap_or_else(|| panic!("not an interrupts line: {line:?}"));
    let counts: Vec<u64> = rest
        .split_whitespace()
        .take(cpus)
        .map(|w| w.parse().unwrap_or(u64::MAX))
        .collect();
    assert!(
        counts.len() == cpus && !counts.contains(&u64::MAX),
        "no {cpus} counts in {line:?}"
    );
    counts
}

fn uart_interrupts_follow_affinity(image_name: &str) {
    let _ = image(image_name);
    let dir = Scratch::new(&format!("irq-{image_name}"));
    let script = dir.write("run.sh", WORKLOAD);
    let out = hartscope(
        &[
            "boot",
            "--image",
            image_name,
            "--smp",
            "2",
            "--workload",
            script.to_str().unwrap(),
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, 0);
    let console = out.stdout_text();
    let field = |key: &str| -> String {
        console
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("`{key}` missing:\n{}", out.tail()))
            .trim()
            .to_string()
    };
    assert_eq!(
        field("irq-affinity:"),
        "2",
        "the kernel accepted CPU1 as the UART's only target"
    );
    let before = per_cpu(&field("irq-before:"), 2);
    let after = per_cpu(&field("irq-after:"), 2);
    assert!(
        after[1] > before[1],
        "CPU1 took the console's interrupts: before {before:?}, after {after:?}"
    );
    assert_eq!(
        after[0], before[0],
        "CPU0 took none after the move: before {before:?}, after {after:?}"
    );
}

#[test]
fn custom_uart_interrupt_moves_to_cpu1() {
    uart_interrupts_follow_affinity("custom");
}

#[test]
fn debian_uart_interrupt_moves_to_cpu1() {
    uart_interrupts_follow_affinity("debian");
}

#[test]
fn interrupt_lines_parse() {
    assert_eq!(
        per_cpu(
            " 12:          3         12  SiFive PLIC  10 Edge      ttyS0",
            2
        ),
        vec![3, 12]
    );
}
