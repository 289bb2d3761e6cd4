//! The pipeline cache on disk ([`crate::MsmConfig::pipeline_cache`]): the driver's compiled
//! pipelines kept between processes, on adapters with `wgpu::Features::PIPELINE_CACHE`
//! (Vulkan).
//!
//! One file per adapter, driver, crate version, profile and shader text:
//! `pipelines-{profile:016x}-{key:016x}.bin` in the cache directory, where `profile` hashes
//! the adapter's identity, the arithmetic profile, the curve and the shader checks, and `key`
//! hashes that, the driver's name and version, this crate's version and every stage's WGSL. The file is
//! a header of four little-endian u64 words (magic, key, payload length, payload checksum)
//! and the payload (wgpu's `PipelineCache::get_data`, which carries wgpu's own header).
//!
//! Nothing in a file is trusted. Only a regular file (not a link, a FIFO or a device) of at
//! most [`MAX_FILE_BYTES`] is read. One whose magic, key, length or checksum disagrees is
//! ignored and replaced at the next save. wgpu then checks its own header against the
//! adapter and the driver's cache identity; where it refuses the data (a foreign header is
//! an error even with `fallback`), the file is removed and the cache made empty. The driver
//! checks its own header last. The checksum (FNV-1a) catches accidents (a torn or truncated
//! write, a flipped bit), not an attacker who can write the user's cache directory: such a
//! writer can replace the program too.
//!
//! Saving writes a file of its own (a name no other writer uses, created new, so never
//! through a planted link) and renames it over the old one, so a reader never sees half a
//! file; a failed save removes it. It also removes this profile's files of other keys (a
//! driver update, another crate version or other shaders leave stale ones).
//!
//! Measured (docs/PERF.md): Mesa 22.3's lavapipe returns its header only (96 bytes), so on
//! it the cache saves nothing; on drivers that fill it, a later process skips compiling.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::PipelineCacheDir;
use crate::gpu::pipelines::stages::Module;
use crate::gpu::shader::field::CurveProfile;

/// The largest cache file read (drivers' caches for these stages are far smaller).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Distinguishes the temporary files of saves in one process.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// "gpumsmpc" as a little-endian word.
const MAGIC: u64 = u64::from_le_bytes(*b"gpumsmpc");
/// Header words before the payload.
const HEADER_BYTES: usize = 32;

/// A pipeline cache and the file it is loaded from and saved to.
pub(in crate::gpu) struct DiskCache {
    pub(in crate::gpu) cache: wgpu::PipelineCache,
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
pub(in crate::gpu) fn directory(choice: &PipelineCacheDir) -> Option<PathBuf> {
    match choice {
        PipelineCacheDir::Off => None,
        PipelineCacheDir::Dir(d) => Some(d.clone()),
        PipelineCacheDir::UserCache => user_cache_dir().map(|d| d.join("gpu-msm")),
    }
}

/// The user's cache directory, from absolute paths only (a relative `XDG_CACHE_HOME` is
/// ignored, as the XDG specification says).
fn user_cache_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|v| v.is_absolute())
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
fn keys(info: &wgpu::AdapterInfo, shaders: CurveProfile, checks: bool) -> (u64, u64) {
    let identity = format!(
        "{}|{:?}|{}|{}|{:?}|{}|{checks}",
        info.name, info.backend, info.vendor, info.device, shaders.arithmetic, shaders.curve.name
    );
    // Every part count's sources follow from these two: one part, and the most a call binds.
    let sources: Vec<String> = [shaders.with_base_parts(1), shaders]
        .iter()
        .flat_map(|&p| Module::ALL.iter().map(move |m| m.source(p)))
        .collect();
    let profile = fnv1a(&[identity.as_bytes()]);
    let mut parts: Vec<&[u8]> = vec![
        identity.as_bytes(),
        info.driver.as_bytes(),
        info.driver_info.as_bytes(),
        env!("CARGO_PKG_VERSION").as_bytes(),
    ];
    parts.extend(sources.iter().map(|s| s.as_bytes()));
    (profile, fnv1a(&parts))
}

/// The bytes of `path` if it is a regular file (not a link, a FIFO or a device) of at most
/// [`MAX_FILE_BYTES`].
fn read_regular_file(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // A link or a FIFO swapped in since the check above is not followed, nor waited on
        // (O_NOFOLLOW | O_NONBLOCK, x86-64 Linux values; elsewhere the check above stands).
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(0o400000 | 0o4000);
    }
    let file = open.open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut out = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= MAX_FILE_BYTES).then_some(out)
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
    pub(in crate::gpu) fn open(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        shaders: CurveProfile,
        checks: bool,
        dir: &Path,
    ) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let (profile, key) = keys(info, shaders, checks);
        let prefix = format!("pipelines-{profile:016x}-");
        let path = dir.join(format!("{prefix}{key:016x}.bin"));
        let file = read_regular_file(&path);
        let data = file.as_deref().and_then(|f| payload(f, key));
        if file.is_some() && data.is_none() {
            tracing::debug!(target: "gpu_msm", path = %path.display(), "pipeline cache file ignored");
        }
        let make = |data| {
            // SAFETY: `data` is passed only when it is exactly what `save` wrote from
            // `PipelineCache::get_data` for this adapter, driver, crate version and shaders
            // (key and checksum match); wgpu checks its header against the adapter and the
            // driver's cache identity, and the driver its own.
            // Its own error scope (not `device::scoped`, which would make the two files
            // import each other): wgpu reports refused data as a validation error.
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let cache = unsafe {
                device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                    label: Some("gpu-msm pipelines"),
                    data,
                    fallback: true,
                })
            };
            match crate::gpu::device::blocking::ready(scope.pop()) {
                None => Ok(cache),
                Some(e) => Err(e),
            }
        };
        let cache = match make(data) {
            Ok(c) => c,
            Err(e) if data.is_some() => {
                tracing::debug!(target: "gpu_msm", path = %path.display(), %e, "pipeline cache data refused");
                let _ = std::fs::remove_file(&path);
                make(None).ok()?
            }
            Err(_) => return None,
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
    pub(in crate::gpu) fn save(&self) {
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
            "{}{:016x}.{}-{}.tmp",
            self.prefix,
            self.key,
            std::process::id(),
            SAVES.fetch_add(1, Ordering::Relaxed)
        ));
        // Created new (never through a planted link); removed on failure only if ours.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let written = file
            .write_all(&encode(data, self.key))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return written;
        }
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
    pub(in crate::gpu) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Arithmetic;

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
    fn only_regular_files_within_the_size_cap_are_read() {
        let dir = std::env::temp_dir().join(format!("gpu-msm-cache-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.bin");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_regular_file(&file).as_deref(), Some(&b"abc"[..]));
        assert_eq!(read_regular_file(&dir), None, "a directory");
        assert_eq!(read_regular_file(&dir.join("missing")), None);
        #[cfg(unix)]
        {
            let link = dir.join("link.bin");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert_eq!(read_regular_file(&link), None, "a link");
        }
        let _ = std::fs::remove_dir_all(&dir);
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
        let bls = crate::curve::bls12_377_g1();
        let (p, k) = keys(&info, Arithmetic::Limbs29.on(bls), false);
        assert_eq!(keys(&info, Arithmetic::Limbs29.on(bls), false), (p, k));
        let (p2, k2) = keys(&info, Arithmetic::Limbs29Edwards.on(bls), false);
        assert!(p2 != p && k2 != k);
        let (p3, k3) = keys(&info, Arithmetic::Limbs29.on(bls), true);
        assert!(p3 != p && k3 != k);
        // A driver update keeps the profile (its stale file is replaced) and changes the key.
        let newer = wgpu::AdapterInfo {
            driver_info: "1.1".into(),
            ..info.clone()
        };
        let (p4, k4) = keys(&newer, Arithmetic::Limbs29.on(bls), false);
        assert!(p4 == p && k4 != k);
        // Another curve is another file.
        let bn = <ark_bn254::g1::Config as crate::curve::GpuCurve>::spec();
        let (p5, k5) = keys(&info, Arithmetic::Limbs29.on(bn), false);
        assert!(p5 != p && k5 != k);
    }

    #[test]
    fn the_user_cache_directory_is_named_gpu_msm() {
        assert_eq!(directory(&PipelineCacheDir::Off), None);
        let d = PathBuf::from("/some/dir");
        assert_eq!(directory(&PipelineCacheDir::Dir(d.clone())), Some(d));
        if let Some(u) = directory(&PipelineCacheDir::UserCache) {
            assert!(u.ends_with("gpu-msm") && u.is_absolute());
        }
    }
}
