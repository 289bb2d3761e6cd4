//! Which devices one engine runs on ([`Devices`]), and the smallest share of a call a device
//! is given.

use crate::error::{MsmError, Result};

/// The devices an engine opens ([`super::MsmConfig::devices`]). With more than one, a call
/// is split across them by points (`src/engine/several/`): each device runs the MSM of its
/// share, and the host adds the shares' sums. Each device has the memory budget
/// [`super::MsmConfig::memory_budget`] of its own. A resident set is placed in shares when
/// it is loaded (by the weights then: equal until split calls have taught the engine better
/// ones), and calls on it follow that placement: a call on a prefix of the set runs on the
/// devices whose shares the prefix reaches (load the set again to follow newer weights).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Devices {
    /// One device, on the adapter [`super::MsmConfig::adapter`] picks (the default).
    #[default]
    One,
    /// A device on every hardware adapter (discrete, integrated or virtual GPU; not a
    /// software one) that passes the known-answer test; an adapter that fails it, or whose
    /// device cannot be made, is left out (a `tracing` warning says why). An adapter that two
    /// backends list (Vulkan and DX12 on Windows) counts once. None at all is as
    /// [`Devices::One`] without an adapter: the CPU paths, unless the GPU is demanded
    /// ([`crate::MsmError::NoAdapter`]).
    AllHardware,
    /// `(name, count)`: `count` devices on the adapters whose name contains `name`
    /// (case-insensitive), spread over them in turn (device j on the j-th match, modulo
    /// their number): `("H200", 8)` on a node of 8 H200s opens one device on each, and
    /// `("llvmpipe", 3)` opens three on lavapipe's one adapter, how the tests split calls.
    /// Every device must be made and pass the known-answer test (else the engine is not
    /// made: the error, or [`crate::MsmError::SelfTestFailed`] even with
    /// `SelfTest::FallBackToCpu`). Neither [`super::MsmConfig::adapter`] nor
    /// [`super::ADAPTER_ENV`] applies (nor to `AllHardware`).
    Named(Vec<(String, usize)>),
}

/// The most devices one engine opens (`Devices::Named`'s counts together): each is a
/// device, its pipelines and a thread while a call runs.
pub const MAX_DEVICES: usize = 64;

/// The fewest points a device is given when a call is split: an n-point call runs on at
/// most `max(1, n / MIN_DEVICE_SHARE)` devices, since a smaller share would cost its device
/// a call's fixed work (a submission, the reduction of every window, a read-back) for
/// little. A resident set is placed the same way when loaded.
pub const MIN_DEVICE_SHARE: usize = 1 << 12;

impl Devices {
    /// [`MsmError::InvalidConfig`] for a `Named` list that is empty, names an empty string
    /// or asks for zero devices, or for more than [`MAX_DEVICES`].
    pub(super) fn validate(&self) -> Result<()> {
        let Devices::Named(list) = self else {
            return Ok(());
        };
        if list.is_empty() {
            return Err(MsmError::InvalidConfig(
                "Devices::Named needs at least one (name, count)".into(),
            ));
        }
        for (name, count) in list {
            if name.trim().is_empty() || !(1..=MAX_DEVICES).contains(count) {
                return Err(MsmError::InvalidConfig(format!(
                    "Devices::Named: ({name:?}, {count}) needs a name and a count from 1 to \
                     {MAX_DEVICES}"
                )));
            }
        }
        let total: usize = list.iter().map(|(_, c)| c).sum();
        if total > MAX_DEVICES {
            return Err(MsmError::InvalidConfig(format!(
                "Devices::Named asks for {total} devices, more than {MAX_DEVICES}"
            )));
        }
        Ok(())
    }

    /// Whether the engine may open more than one device.
    pub fn several(&self) -> bool {
        *self != Devices::One
    }
}
