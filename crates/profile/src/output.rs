//! The profile's files: a text table (per function and per line, like the SDK's
//! `dpu-profiling dpu-statistics`), a JSON summary, folded stacks (for flame graphs) and a
//! speedscope profile with the per-line figures; each for the run and for every launch.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use crate::profile::{FrameKey, Profile};
use crate::wait::Wait;

/// Lines listed per section of the text table (all are in the JSON).
const TABLE_LINES: usize = 40;

/// `part` of `whole` in percent, rounded to 0.01.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 10000.0 / whole as f64).round() / 100.0
    }
}

/// Writes every file into `dir`; the names written.
pub fn write_all(
    dir: &Path,
    selection: &str,
    run: &Profile,
    launches: &[Profile],
    note: Option<&str>,
) -> std::io::Result<Vec<String>> {
    let mut written = Vec::new();
    let mut put = |name: String, text: String| -> std::io::Result<()> {
        std::fs::write(dir.join(&name), text)?;
        written.push(name);
        Ok(())
    };
    let mut table = text(&format!("run (all launches, DPUs: {selection})"), run);
    if let Some(note) = note {
        table.push_str(&format!("\nnote: {note}\n"));
    }
    for (i, l) in launches.iter().enumerate() {
        table.push('\n');
        table.push_str(&text(&format!("launch {} (DPUs: {selection})", i + 1), l));
    }
    put("profile.txt".into(), table)?;
    let summary = json!({
        "schema_version": 1,
        "dpus": selection,
        "note": note,
        "run": to_json(run),
        "launches": launches.iter().enumerate().map(|(i, l)| {
            let mut v = to_json(l);
            v["launch"] = json!(i + 1);
            v
        }).collect::<Vec<_>>(),
    });
    put(
        "profile.json".into(),
        serde_json::to_string_pretty(&summary).map_err(std::io::Error::other)?,
    )?;
    put("run.folded".into(), folded(run))?;
    for (i, l) in launches.iter().enumerate() {
        put(format!("launch-{}.folded", i + 1), folded(l))?;
    }
    let mut profiles = vec![("run".to_string(), run)];
    for (i, l) in launches.iter().enumerate() {
        profiles.push((format!("launch {}", i + 1), l));
    }
    put(
        "profile.speedscope.json".into(),
        serde_json::to_string(&speedscope(&profiles)).map_err(std::io::Error::other)?,
    )?;
    Ok(written)
}

/// Folded stacks, one `frame;...;leaf COUNT` line per stack.
pub fn folded(p: &Profile) -> String {
    let mut s = String::new();
    for (stack, n) in p.folded() {
        let _ = writeln!(s, "{stack} {n}");
    }
    s
}

/// The text table of one profile.
pub fn text(title: &str, p: &Profile) -> String {
    let total = p.cycles();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "== DPU profile: {title}: {} DPU run(s), {total} cycles, {} instructions",
        p.run_count,
        p.instructions()
    );
    let inclusive = p.inclusive();
    let _ = writeln!(
        o,
        "\n{:>12} {:>7} {:>12} {:>7} {:>12}  function",
        "self cycles", "%", "total cycles", "%", "instructions"
    );
    for (name, c) in p.functions() {
        let incl = inclusive.get(&name).copied().unwrap_or(c.cycles);
        let _ = writeln!(
            o,
            "{:>12} {:>6.2}% {:>12} {:>6.2}% {:>12}  {name}",
            c.cycles,
            percent(c.cycles, total),
            incl,
            percent(incl, total),
            c.slots
        );
    }
    if p.has_lines {
        let lines = p.lines_sorted();
        let _ = writeln!(
            o,
            "\n{:>12} {:>7} {:>12}  line (function)",
            "cycles", "%", "instructions"
        );
        for (k, c) in lines.iter().take(TABLE_LINES) {
            // (A wait frame is its own line; a pc without a line table entry is "-".)
            let at = match k.location() {
                Some(at) => format!("{at} ({})", k.function),
                None if k.function.starts_with("[wait") => k.function.clone(),
                None => format!("- ({})", k.function),
            };
            let _ = writeln!(
                o,
                "{:>12} {:>6.2}% {:>12}  {at}",
                c.cycles,
                percent(c.cycles, total),
                c.slots,
            );
        }
        if lines.len() > TABLE_LINES {
            let _ = writeln!(
                o,
                "  ... {} more lines in profile.json",
                lines.len() - TABLE_LINES
            );
        }
    } else {
        let _ = writeln!(
            o,
            "\n(no DWARF lines: the program was built without -g; functions only)"
        );
    }
    if !p.tasklets.is_empty() {
        let _ = write!(
            o,
            "\ntasklet-cycles (summed over the DPUs)\n{:>7} {:>12}",
            "tasklet", "issue"
        );
        let used: Vec<Wait> = Wait::ALL
            .into_iter()
            .filter(|w| p.tasklets.values().any(|t| t.waits[w.index()] > 0))
            .collect();
        for w in &used {
            let _ = write!(o, " {:>12}", w.key());
        }
        o.push('\n');
        for (t, c) in &p.tasklets {
            let _ = write!(o, "{t:>7} {:>12}", c.issue);
            for w in &used {
                let _ = write!(o, " {:>12}", c.waits[w.index()]);
            }
            o.push('\n');
        }
    }
    o
}

fn frame_json(k: &FrameKey) -> Value {
    json!({
        "function": k.function,
        "location": k.location(),
    })
}

/// The JSON of one profile.
pub fn to_json(p: &Profile) -> Value {
    let total = p.cycles();
    let inclusive = p.inclusive();
    json!({
        "dpu_runs": p.runs.iter().map(|r| json!({
            "rank": r.rank, "dpu": r.dpu, "launch": r.launch,
            "cycles": r.cycles, "instructions": r.instructions, "charged_cycles": r.charged,
        })).collect::<Vec<_>>(),
        "dpu_run_count": p.run_count,
        "inexact_runs": p.inexact_runs,
        "cycles": total,
        "instructions": p.instructions(),
        "has_lines": p.has_lines,
        "functions": p.functions().into_iter().map(|(name, c)| json!({
            "function": name,
            "cycles": c.cycles,
            "percent": percent(c.cycles, total),
            "total_cycles": inclusive.get(&name).copied().unwrap_or(c.cycles),
            "instructions": c.slots,
        })).collect::<Vec<_>>(),
        "lines": p.lines_sorted().into_iter().map(|(k, c)| {
            let mut v = frame_json(k);
            v["cycles"] = json!(c.cycles);
            v["instructions"] = json!(c.slots);
            v
        }).collect::<Vec<_>>(),
        "waits": Wait::ALL.iter().map(|w| (w.key().to_string(), json!(
            p.lines.get(&FrameKey { function: w.frame().into(), file: None, line: None })
                .map_or(0, |c| c.cycles)
        ))).collect::<serde_json::Map<_, _>>(),
        "tasklets": p.tasklets.iter().map(|(t, c)| {
            let mut v = json!({ "tasklet": t, "issue": c.issue });
            for w in Wait::ALL {
                v[w.key()] = json!(c.waits[w.index()]);
            }
            v
        }).collect::<Vec<_>>(),
    })
}

/// A speedscope profile (https://www.speedscope.app, its file format): one sampled profile
/// per (name, profile), each stack a sample weighted by its cycles; frames are functions at
/// a line (the issuing line for the leaf, the call site for the others).
pub fn speedscope(profiles: &[(String, &Profile)]) -> Value {
    let mut frames: Vec<Value> = Vec::new();
    let mut index: HashMap<FrameKey, usize> = HashMap::new();
    let mut out = Vec::new();
    for (name, p) in profiles {
        let mut stacks: Vec<(&Vec<FrameKey>, u64)> =
            p.stacks.iter().map(|(k, v)| (k, *v)).collect();
        stacks.sort();
        let mut samples = Vec::new();
        let mut weights = Vec::new();
        for (stack, n) in stacks {
            if n == 0 {
                continue;
            }
            let ids: Vec<usize> = stack
                .iter()
                .map(|f| {
                    *index.entry(f.clone()).or_insert_with(|| {
                        let name = match f.location() {
                            Some(at) => format!("{} {at}", f.function),
                            None => f.function.clone(),
                        };
                        let mut v = json!({ "name": name });
                        if let Some(file) = &f.file {
                            v["file"] = json!(file);
                        }
                        if let Some(line) = f.line {
                            v["line"] = json!(line);
                        }
                        frames.push(v);
                        frames.len() - 1
                    })
                })
                .collect();
            samples.push(ids);
            weights.push(n);
        }
        out.push(json!({
            "type": "sampled",
            "name": format!("{name} (DPU cycles)"),
            "unit": "none",
            "startValue": 0,
            "endValue": p.cycles(),
            "samples": samples,
            "weights": weights,
        }));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "exporter": "openpim-profile",
        "name": "OpenPIM DPU profile",
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Counts;

    fn key(f: &str, line: Option<u32>) -> FrameKey {
        FrameKey {
            function: f.into(),
            file: line.map(|_| "/x/k.c".into()),
            line,
        }
    }

    fn sample() -> Profile {
        let mut p = Profile {
            has_lines: true,
            ..Profile::default()
        };
        p.lines.insert(
            key("f", Some(3)),
            Counts {
                cycles: 30,
                slots: 30,
            },
        );
        p.lines.insert(
            key("g", Some(9)),
            Counts {
                cycles: 60,
                slots: 60,
            },
        );
        p.lines.insert(
            key("[wait: dma]", None),
            Counts {
                cycles: 10,
                slots: 0,
            },
        );
        p.stacks
            .insert(vec![key("main", Some(20)), key("f", Some(3))], 30);
        p.stacks
            .insert(vec![key("main", Some(21)), key("g", Some(9))], 60);
        p.stacks.insert(vec![key("[wait: dma]", None)], 10);
        p.run_count = 1;
        p.total_cycles = 100;
        p.total_instructions = 90;
        p.runs.push(crate::profile::RunEntry {
            rank: 0,
            dpu: 0,
            launch: 1,
            cycles: 100,
            instructions: 90,
            charged: 100,
        });
        p
    }

    #[test]
    fn folded_lines_are_function_names() {
        let f = folded(&sample());
        assert_eq!(f, "[wait: dma] 10\nmain;f 30\nmain;g 60\n");
    }

    #[test]
    fn table_and_json_agree() {
        let p = sample();
        let t = text("run", &p);
        assert!(t.contains("k.c:9 (g)"), "{t}");
        let j = to_json(&p);
        let sum: u64 = j["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["cycles"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, 100);
        assert_eq!(j["functions"][0]["function"], "g");
        assert_eq!(j["functions"][0]["percent"], 60.0);
        assert_eq!(j["waits"]["dma"], 10);
    }

    #[test]
    fn speedscope_weights_sum_to_cycles() {
        let p = sample();
        let s = speedscope(&[("run".into(), &p)]);
        let w: u64 = s["profiles"][0]["weights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(w, 100);
        assert_eq!(s["shared"]["frames"].as_array().unwrap().len(), 5);
    }
}
