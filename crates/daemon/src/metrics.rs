//! Metrics in the Prometheus text exposition format (`docs/sharing.md` lists them), written
//! to a file that a node exporter's textfile collector, or anyone, reads.

use std::fmt::Write;

use crate::manager::Manager;

/// The metrics now.
pub fn render(m: &Manager) -> String {
    let table = m.table();
    let mut s = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, rows: &[(String, f64)]| {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(s, "{name}{labels} {v}");
        }
    };
    let states = ["NAAV", "ALLO", "NANA", "SUSP"];
    let by_state: Vec<(String, f64)> = states
        .iter()
        .map(|st| {
            let n = table.iter().filter(|r| r.state == *st).count();
            (format!("{{state=\"{st}\"}}"), n as f64)
        })
        .collect();
    metric(
        "openpim_ranks",
        "gauge",
        "Ranks by state (SUSP: suspended to the suspend directory, held by no slot).",
        &by_state,
    );
    let per_rank = |f: &dyn Fn(&openpim_runtime::exec::remote::protocol::PoolRank) -> f64| {
        // Per slot (a suspended rank holds none; its number may be a slot's).
        table
            .iter()
            .filter(|r| r.state != "SUSP")
            .map(|r| (format!("{{rank=\"{}\"}}", r.rank), f(r)))
            .collect::<Vec<_>>()
    };
    metric(
        "openpim_rank_bytes_moved",
        "gauge",
        "Bytes moved between tenants and the rank in its current allocation.",
        &per_rank(&|r| r.bytes_moved as f64),
    );
    metric(
        "openpim_rank_launches",
        "gauge",
        "Launches on the rank in its current allocation.",
        &per_rank(&|r| r.launches as f64),
    );
    metric(
        "openpim_rank_idle_held_seconds",
        "gauge",
        "Time the rank has been allocated with nothing running on it nor moving to it.",
        &per_rank(&|r| r.idle_ms as f64 / 1000.0),
    );
    metric(
        "openpim_rank_wipes_total",
        "counter",
        "Wipes of the rank since the daemon started.",
        &per_rank(&|r| r.wipes as f64),
    );
    let (wipes, total_ns, max_ns) = m.wipe_stats();
    metric(
        "openpim_wipe_seconds_sum",
        "counter",
        "Time spent wiping ranks.",
        &[(String::new(), total_ns as f64 / 1e9)],
    );
    metric(
        "openpim_wipe_seconds_count",
        "counter",
        "Wipes done.",
        &[(String::new(), wipes as f64)],
    );
    metric(
        "openpim_wipe_seconds_max",
        "gauge",
        "Longest wipe.",
        &[(String::new(), max_ns as f64 / 1e9)],
    );
    let (allocs, a_ns, a_max) = m.alloc_stats();
    metric(
        "openpim_alloc_seconds_sum",
        "counter",
        "Time from request to grant of the allocations served without waiting.",
        &[(String::new(), a_ns as f64 / 1e9)],
    );
    metric(
        "openpim_alloc_seconds_count",
        "counter",
        "Allocations served without waiting.",
        &[(String::new(), allocs as f64)],
    );
    metric(
        "openpim_alloc_seconds_max",
        "gauge",
        "Longest of them.",
        &[(String::new(), a_max as f64 / 1e9)],
    );
    metric(
        "openpim_alloc_waiting",
        "gauge",
        "Allocation requests waiting for ranks.",
        &[(String::new(), m.waiting() as f64)],
    );
    for (what, t) in [("suspend", m.suspend_stats()), ("resume", m.resume_stats())] {
        let help = match what {
            "suspend" => "Suspensions of idle ranks (oversubscription): time to write the rank out and wipe its slot.",
            _ => "Resumptions of suspended ranks: time from the tenant's request to the rank back on a slot (waiting included).",
        };
        metric(
            &format!("openpim_{what}_seconds_sum"),
            "counter",
            help,
            &[(String::new(), t.total_ns as f64 / 1e9)],
        );
        metric(
            &format!("openpim_{what}_seconds_count"),
            "counter",
            &format!("Count of {what}s."),
            &[(String::new(), t.count as f64)],
        );
        metric(
            &format!("openpim_{what}_seconds_max"),
            "gauge",
            &format!("Longest {what}."),
            &[(String::new(), t.max_ns as f64 / 1e9)],
        );
    }
    let (_, bytes) = m.suspended_now();
    metric(
        "openpim_suspended_bytes",
        "gauge",
        "Bytes of the files of the ranks suspended now.",
        &[(String::new(), bytes as f64)],
    );
    metric(
        "openpim_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
        &[(String::new(), m.uptime().as_secs_f64())],
    );
    s
}

/// Rewrites `path` with the metrics (atomically: a reader never sees half a file).
pub fn write_file(path: &str, m: &Manager) {
    let tmp = format!("{path}.tmp");
    if std::fs::write(&tmp, render(m)).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}
