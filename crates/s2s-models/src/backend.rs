//! The one place that chooses where tensors live. Cargo features (`cuda`, `wgpu`, `rocm`) add
//! backends; the pure-Rust CPU backend `flex` is always there and is the default.

use burn::tensor::Device;

/// Parses a device name as given on the command line: `cpu` (flex), `cuda:N`, `wgpu`, `rocm:N`.
pub fn parse_device(name: &str) -> Result<Device, String> {
    let (kind, index) = match name.split_once(':') {
        Some((k, i)) => (
            k,
            i.parse::<usize>()
                .map_err(|_| format!("device index in `{name}` is not a number"))?,
        ),
        None => (name, 0),
    };
    match kind {
        "cpu" | "flex" => Ok(Device::flex()),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Device::cuda(index)),
        #[cfg(feature = "rocm")]
        "rocm" => Ok(Device::rocm(index)),
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            let _ = index;
            Ok(Device::wgpu(Default::default()))
        }
        other => {
            let _ = index;
            Err(format!(
                "unknown or not compiled-in device `{other}`: use `cpu`, or rebuild with `--features cuda|wgpu|rocm`"
            ))
        }
    }
}

/// The kinds of device this build can run on, for `s2s --version`: a prebuilt binary says what
/// it was compiled with.
pub fn compiled_devices() -> Vec<&'static str> {
    let mut kinds = vec!["cpu"];
    if cfg!(feature = "cuda") {
        kinds.push("cuda");
    }
    if cfg!(feature = "rocm") {
        kinds.push("rocm");
    }
    if cfg!(feature = "wgpu") {
        kinds.push("wgpu");
    }
    kinds
}

/// Parses a comma-separated device list (`--devices cuda:0,cuda:1`; `cpu,cpu` runs the
/// multi-device code path on the CPU). The first device is the main one.
pub fn parse_devices(list: &str) -> Result<Vec<Device>, String> {
    let devices = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_device)
        .collect::<Result<Vec<_>, _>>()?;
    if devices.is_empty() {
        return Err(format!("--devices `{list}` names no device"));
    }
    Ok(devices)
}

/// The default device: `S2S_DEVICE` if set, else the CPU.
pub fn default_device() -> Device {
    match std::env::var("S2S_DEVICE") {
        Ok(name) => parse_device(&name).unwrap_or_else(|e| panic!("S2S_DEVICE: {e}")),
        Err(_) => Device::flex(),
    }
}
