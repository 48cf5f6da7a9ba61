//! gem5 `stats.txt`: one `Begin/End Simulation Statistics` block per phase,
//! then one for the whole run.

use std::fmt::Write;

use crate::stats::StatBlock;

/// Phase blocks in order, then the total block.
pub fn stats_txt(phases: &[StatBlock], total: &StatBlock) -> String {
    stats_txt_blocks(phases.iter().chain(std::iter::once(total)))
}

/// Any sequence of blocks, each as gem5 dumps it.
pub fn stats_txt_blocks<'a>(blocks: impl IntoIterator<Item = &'a StatBlock>) -> String {
    let mut out = String::new();
    for block in blocks {
        out.push_str("\n---------- Begin Simulation Statistics ----------\n");
        for s in block.stats() {
            // gem5's scalar line: name, value, then the (empty) pdf and cdf
            // columns, then `# description (Unit)`.
            let _ = writeln!(
                out,
                "{:<40} {:>12} {:>10} {:>10} # {} ({})",
                s.name,
                s.value.to_gem5_string(),
                "",
                "",
                s.desc,
                s.unit.as_str()
            );
        }
        out.push_str("\n---------- End Simulation Statistics   ----------\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::{HartCounts, Phase};
    use crate::stats::Unit;

    #[test]
    fn exact_output() {
        let phase = Phase {
            index: 1,
            label: "echo command".into(),
            start_cycle: 1000,
            end_cycle: 2598,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 1598,
                instret: 800,
            }],
        };
        let mut p = StatBlock::for_phase(&phase);
        p.add_u64(
            "system.cpu0.cycles",
            1598,
            Unit::Cycle,
            "Cycles the hart was busy",
        )
        .unwrap();
        p.add_ratio(
            "system.cpu0.cpi",
            1598,
            800,
            Unit::CyclePerCount,
            "Cycles per instruction",
        )
        .unwrap();
        let mut total = StatBlock::new("total");
        total
            .add_u64(
                "system.cpu0.cycles",
                2598,
                Unit::Cycle,
                "Cycles the hart was busy",
            )
            .unwrap();
        total
            .add_ratio(
                "system.cpu0.cpi",
                2598,
                0,
                Unit::CyclePerCount,
                "Cycles per instruction",
            )
            .unwrap();
        let expected = "
---------- Begin Simulation Statistics ----------
phase.index                                         1                       # Index of phase \"echo command\" (Count)
phase.startCycle                                 1000                       # Cycle at which the phase starts (Cycle)
phase.endCycle                                   2598                       # Cycle at which the phase ends (Cycle)
phase.cycles                                     1598                       # Length of the phase (Cycle)
system.cpu0.cycles                               1598                       # Cycles the hart was busy (Cycle)
system.cpu0.cpi                              1.997500                       # Cycles per instruction ((Cycle/Count))

---------- End Simulation Statistics   ----------

---------- Begin Simulation Statistics ----------
system.cpu0.cycles                               2598                       # Cycles the hart was busy (Cycle)
system.cpu0.cpi                                   nan                       # Cycles per instruction ((Cycle/Count))

---------- End Simulation Statistics   ----------
";
        assert_eq!(stats_txt(&[p], &total), expected);
    }
}
