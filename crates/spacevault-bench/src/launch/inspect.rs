//! What a benchmark may look at inside vaults that run in this process:
//! their stores, their views of the others, their crypto meters. Vaults of
//! their own processes, or attached, answer none of it.

use super::{Network, Vaults};

impl Network {
    /// Whether vault `i` keeps a copy of the blob at `address`, for vaults
    /// in this process (None for vault processes).
    pub fn keeps(&self, i: usize, address: &[u8; 32]) -> Option<bool> {
        match &self.vaults {
            Vaults::InProcess(nodes) => nodes.get(i)?.keeps_blob(address).ok(),
            Vaults::Processes(_) | Vaults::Attached => None,
        }
    }

    /// The blobs vault `i` keeps, for vaults in this process (None for
    /// vault processes, or a store that could not be read).
    pub fn kept_blobs(&self, i: usize) -> Option<Vec<[u8; 32]>> {
        match &self.vaults {
            Vaults::InProcess(nodes) => nodes.get(i)?.kept_blobs().ok(),
            Vaults::Processes(_) | Vaults::Attached => None,
        }
    }

    /// Whether vault `i` counts the vault of farmer key `key` alive, for
    /// vaults in this process (None for vault processes).
    pub fn counts_alive(&self, i: usize, key: &[u8; 32]) -> Option<bool> {
        match &self.vaults {
            Vaults::InProcess(nodes) => Some(nodes.get(i)?.counts_alive(key)),
            Vaults::Processes(_) | Vaults::Attached => None,
        }
    }

    /// Whether vault `i` names `key` among the holders of its chain's era
    /// (every vault does in the bootstrap era), for vaults in this process.
    pub fn names_holder(&self, i: usize, key: &[u8; 32]) -> Option<bool> {
        match &self.vaults {
            Vaults::InProcess(nodes) => Some(nodes.get(i)?.names_holder(key)),
            Vaults::Processes(_) | Vaults::Attached => None,
        }
    }

    /// Every vault's count and nanoseconds of the crypto operation `op`,
    /// summed, for vaults in this process (None for vault processes).
    pub fn crypto_op(&self, op: spacevault_meter::Op) -> Option<(u64, u64)> {
        match &self.vaults {
            Vaults::InProcess(nodes) => Some(nodes.iter().fold((0, 0), |(c, t), n| {
                (c + n.meter().count(op), t + n.meter().nanos(op))
            })),
            Vaults::Processes(_) | Vaults::Attached => None,
        }
    }
}
