//! Which DPUs and tasklets a tool looks at: `RANK.DPU` lists and tasklet lists, as the
//! environment variables give them.

use crate::error::Error;

/// A DPU by the machine's rank slot and its index in the rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DpuId {
    pub rank: u32,
    pub dpu: u32,
}

impl std::fmt::Display for DpuId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.rank, self.dpu)
    }
}

/// Parses `RANK.DPU` (e.g. `0.3`).
pub fn parse_dpu(var: &'static str, s: &str) -> Result<DpuId, Error> {
    let bad = |why: &str| Error::BadSetting {
        var,
        value: s.to_string(),
        why: why.to_string(),
    };
    let (r, d) = s.trim().split_once('.').ok_or_else(|| {
        bad("expected RANK.DPU, e.g. 0.3 (the rank slot and the DPU's index in it)")
    })?;
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| bad("RANK and DPU must be non-negative integers, e.g. 0.3"))
    };
    Ok(DpuId {
        rank: num(r)?,
        dpu: num(d)?,
    })
}

/// Parses a comma-separated list of `RANK.DPU` (empty: `None`, every DPU).
pub fn parse_dpus(var: &'static str, s: &str) -> Result<Option<Vec<DpuId>>, Error> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    s.split(',')
        .map(|x| parse_dpu(var, x))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Parses a comma-separated list of tasklets (0..24) into a mask (empty: every tasklet).
pub fn parse_tasklets(var: &'static str, s: &str) -> Result<u32, Error> {
    if s.trim().is_empty() {
        return Ok(u32::MAX);
    }
    let mut mask = 0u32;
    for t in s.split(',') {
        let n = t
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n < openpim_engine::map::MAX_TASKLETS)
            .ok_or_else(|| Error::BadSetting {
                var,
                value: s.to_string(),
                why: format!(
                    "`{t}` is not a tasklet: give tasklet numbers 0..{} separated by commas, e.g. 0,2",
                    openpim_engine::map::MAX_TASKLETS - 1
                ),
            })?;
        mask |= 1 << n;
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dpus_and_tasklets() {
        assert_eq!(parse_dpu("V", "2.17").unwrap(), DpuId { rank: 2, dpu: 17 });
        assert!(parse_dpu("V", "3")
            .unwrap_err()
            .to_string()
            .contains("RANK.DPU"));
        assert_eq!(parse_dpus("V", "").unwrap(), None);
        assert_eq!(parse_dpus("V", "0.1,1.0").unwrap().unwrap().len(), 2);
        assert_eq!(parse_tasklets("V", "0,2").unwrap(), 0b101);
        assert!(parse_tasklets("V", "30")
            .unwrap_err()
            .to_string()
            .contains("0..23"));
    }
}
