//! `--partition`: one shard of a run, as cargo-nextest shards tests, so
//! that CI can spread the suite over N machines and merge the reports.
//! `count:K/N` deals the cases out in catalogue order (the K-th of every
//! N); `hash:K/N` sends each case by a hash of its id, so that a case stays
//! in its shard when others are added or removed. Either way the shards are
//! disjoint and together make the whole run.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// Shard `shard` (1-based) of `of`, dealt in order.
    Count { shard: u64, of: u64 },
    /// Shard `shard` (1-based) of `of`, by the hash of the case id.
    Hash { shard: u64, of: u64 },
}

impl Partition {
    /// Keeps the items of this shard; `id` names an item.
    pub fn select<T>(&self, items: Vec<T>, id: impl Fn(&T) -> &str) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(i, item)| match *self {
                Partition::Count { shard, of } => *i as u64 % of == shard - 1,
                Partition::Hash { shard, of } => fnv1a(id(item)) % of == shard - 1,
            })
            .map(|(_, item)| item)
            .collect()
    }
}

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is not).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Partition, String> {
        let usage = || format!("invalid partition {text:?}: expected count:K/N or hash:K/N, 1 <= K <= N");
        let (kind, shard) = text.split_once(':').ok_or_else(usage)?;
        let (k, n) = shard.split_once('/').ok_or_else(usage)?;
        let (shard, of): (u64, u64) = (k.parse().map_err(|_| usage())?, n.parse().map_err(|_| usage())?);
        if shard == 0 || shard > of {
            return Err(usage());
        }
        match kind {
            "count" => Ok(Partition::Count { shard, of }),
            "hash" => Ok(Partition::Hash { shard, of }),
            _ => Err(usage()),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Count { shard, of } => write!(f, "count:{shard}/{of}"),
            Partition::Hash { shard, of } => write!(f, "hash:{shard}/{of}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for text in ["count:1/3", "hash:3/3"] {
            assert_eq!(text.parse::<Partition>().unwrap().to_string(), text);
        }
        for bad in ["count:0/3", "hash:4/3", "hash:1", "slice:1/2", "count:a/2", "count:1/0"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }
}
