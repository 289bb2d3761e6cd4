//! The pipeline cache on disk ([`crate::MsmConfig::pipeline_cache`]): the driver's compiled
//! pipelines kept between processes, on adapters with `wgpu::Features::PIPELINE_CACHE`
//! (Vulkan).
//!
//! One file per adapter, driver, crate version, profile and shader text:
//! `pipelines-{profile:016x}-{key:016x}.bin` in the cache directory, where `profile` hashes
//! the adapter's identity, the arithmetic and the shader checks, and `key` hashes that,
//! the driver's name and version, this crate's version and every stage's WGSL. The file is
//! a header of four little-endian u64 words (magic, key, payload length, payload checksum)
//! and the payload (wgpu's `PipelineCache::get_data`, which carries wgpu's own header).
//!
//! Nothing in a file is trusted: a file whose magic, key, length or checksum disagrees is
//! ignored and replaced at the next save; wgpu then checks its header against the adapter
//! and the driver's cache identity (falling back to an empty cache on a mismatch), and the
//! driver checks its own. Saving writes a new file and renames it over the old one, so a
//! reader never sees half a file, and removes the same profile's files of other keys (a
//! driver update, another crate version or other shaders leave stale ones).
//!
//! Measured (docs/PERF.md): Mesa 22.3's lavapipe returns its header only (96 bytes), so on
//! it the cache saves nothing; on drivers that fill it, a later process skips compiling.

use std::path::{Path, PathBuf};

use super::shader::field::Arithmetic;
use super::stages::StageId;
use crate::config::PipelineCache;

/// "gpumsmpc" as a little-endian word.
const MAGIC: u64 = u64::from_le_bytes(*b"gpumsmpc");
/// Header words before the payload.
const HEADER_BYTES: usize = 32;

/// A pipeline cache and the file it is loaded from and saved to.
pub(super) struct DiskCache {
    pub(super) cache: wgpu::PipelineCache,
    path: PathBuf,
    key: u64,
    /// The file-name prefix of this profile's files (stale ones are removed on save).
    prefix: String,
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (the standard hasher is not).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Parts are delimited, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The directory `choice` names, `None` when off or when no cache directory is known.
pub(crate) fn directory(choice: &PipelineCache) -> Option<PathBuf> {
    match choice {
        PipelineCache::Off => None,
        PipelineCache::Dir(d) => Some(d.clone()),
        PipelineCache::UserCache => user_cache_dir().map(|d| d.join("gpu-msm")),
    }
}

fn user_cache_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if cfg!(windows) {
        env("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        env("HOME").map(|h| h.join("Library/Caches"))
    } else {
        env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|h| h.join(".cache")))
    }
}

/// The file's (profile, key) hashes for a device's shaders.
fn keys(info: &wgpu::AdapterInfo, arithmetic: Arithmetic, checks: bool) -> (u64, u64) {
    let identity = format!(
        "{}|{:?}|{}|{}|{arithmetic:?}|{checks}",
        info.name, info.backend, info.vendor, info.device
    );
    let profile = fnv1a(&[identity.as_bytes()]);
    let mut modules: Vec<_> = StageId::ALL.iter().map(|id| id.def().module).collect();
    modules.dedup();
    let sources: Vec<String> = modules.iter().map(|m| m.source(arithmetic)).collect();
    let mut parts: Vec<&[u8]> = vec![
        identity.as_bytes(),
        info.driver.as_bytes(),
        info.driver_info.as_bytes(),
        env!("CARGO_PKG_VERSION").as_bytes(),
    ];
    parts.extend(sources.iter().map(|s| s.as_bytes()));
    (profile, fnv1a(&parts))
}

/// The payload of a cache file, if its header matches `key` and its checksum its bytes.
fn payload(file: &[u8], key: u64) -> Option<&[u8]> {
    let word = |i: usize| {
        let bytes = file.get(8 * i..8 * i + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    };
    let (magic, file_key, len, sum) = (word(0)?, word(1)?, word(2)?, word(3)?);
    let data = &file[HEADER_BYTES..];
    (magic == MAGIC && file_key == key && len == data.len() as u64 && sum == fnv1a(&[data]))
        .then_some(data)
}

/// A cache file's bytes for `data`.
fn encode(data: &[u8], key: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + data.len());
    for w in [MAGIC, key, data.len() as u64, fnv1a(&[data])] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(data);
    out
}

impl DiskCache {
    /// The device's pipeline cache, loaded from `dir` where a valid file is there; `None`
    /// when the device was created without `Features::PIPELINE_CACHE`.
    pub(super) fn open(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        arithmetic: Arithmetic,
        checks: bool,
        dir: &Path,
    ) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let (profile, key) = keys(info, arithmetic, checks);
        let prefix = format!("pipelines-{profile:016x}-");
        let path = dir.join(format!("{prefix}{key:016x}.bin"));
        let file = std::fs::read(&path).ok();
        let data = file.as_deref().and_then(|f| payload(f, key));
        if file.is_some() && data.is_none() {
            tracing::debug!(target: "gpu_msm", path = %path.display(), "pipeline cache file ignored");
        }
        // SAFETY: `data` is passed only when it is exactly what `save` wrote from
        // `PipelineCache::get_data` for this adapter, driver, crate version and shaders (key
        // and checksum match); wgpu checks its header against the adapter and the driver's
        // cache identity and falls back to an empty cache on a mismatch (`fallback: true`).
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("gpu-msm pipelines"),
                data,
                fallback: true,
            })
        };
        Some(Self {
            cache,
            path,
            key,
            prefix,
        })
    }

    /// Writes the cache's data to its file (a new file renamed over the old), and removes
    /// this profile's files of other keys. Failures are logged, never fatal: the cache only
    /// saves time.
    pub(super) fn save(&self) {
        let Some(data) = self.cache.get_data() else {
            return;
        };
        if let Err(e) = self.write(&data) {
            tracing::debug!(target: "gpu_msm", path = %self.path.display(), %e, "pipeline cache not saved");
        }
    }

    fn write(&self, data: &[u8]) -> std::io::Result<()> {
        let dir = self.path.parent().expect("a file in a directory");
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            "{}{:016x}.{}.tmp",
            self.prefix,
            self.key,
            std::process::id()
        ));
        std::fs::write(&tmp, encode(data, self.key))?;
        std::fs::rename(&tmp, &self.path)?;
        let ours = self.path.file_name();
        for entry in std::fs::read_dir(dir)?.flatten() {
            let name = entry.file_name();
            let stale = name.to_str().is_some_and(|n| {
                n.starts_with(&self.prefix) && n.ends_with(".bin") && Some(name.as_os_str()) != ours
            });
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// The file this cache is kept in.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_used_only_with_its_key_and_intact_bytes() {
        let data = b"driver data".to_vec();
        let file = encode(&data, 7);
        assert_eq!(payload(&file, 7), Some(&data[..]));
        // Another key (adapter, driver, crate version or shaders): ignored.
        assert_eq!(payload(&file, 8), None);
        // Any byte changed, truncated or extended: ignored.
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x10;
            assert_eq!(payload(&bad, 7), None, "byte {i} flipped");
        }
        assert_eq!(payload(&file[..file.len() - 1], 7), None);
        assert_eq!(payload(&file[..10], 7), None);
        let mut longer = file.clone();
        longer.push(0);
        assert_eq!(payload(&longer, 7), None);
        assert_eq!(payload(&[], 7), None);
    }

    #[test]
    fn keys_follow_the_profile_and_the_shaders() {
        let info = wgpu::AdapterInfo {
            name: "gpu".into(),
            vendor: 1,
            device: 2,
            device_type: wgpu::DeviceType::DiscreteGpu,
            device_pci_bus_id: String::new(),
            driver: "driver".into(),
            driver_info: "1.0".into(),
            backend: wgpu::Backend::Vulkan,
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            transient_saves_memory: None,
            limit_bucket: None,
        };
        let (p, k) = keys(&info, Arithmetic::Limbs32, false);
        assert_eq!(keys(&info, Arithmetic::Limbs32, false), (p, k));
        let (p2, k2) = keys(&info, Arithmetic::Limbs32Edwards, false);
        assert!(p2 != p && k2 != k);
        let (p3, k3) = keys(&info, Arithmetic::Limbs32, true);
        assert!(p3 != p && k3 != k);
        // A driver update keeps the profile (its stale file is replaced) and changes the key.
        let newer = wgpu::AdapterInfo {
            driver_info: "1.1".into(),
            ..info.clone()
        };
        let (p4, k4) = keys(&newer, Arithmetic::Limbs32, false);
        assert!(p4 == p && k4 != k);
    }

    #[test]
    fn the_user_cache_directory_is_named_gpu_msm() {
        assert_eq!(directory(&PipelineCache::Off), None);
        let d = PathBuf::from("/some/dir");
        assert_eq!(directory(&PipelineCache::Dir(d.clone())), Some(d));
        if let Some(u) = directory(&PipelineCache::UserCache) {
            assert!(u.ends_with("gpu-msm"));
        }
    }
}
