//! Every message this crate writes, as snapshots: each echoes the input, names the rule, and
//! says what to do.

use std::fmt::Write as _;

use gpu_uuid::{GpuUuid, MigUuid, VisibleDevices, resolve};

use crate::hosts;

fn render<E: std::fmt::Display>(
    inputs: &[&str],
    parse: impl Fn(&str) -> Result<String, E>,
) -> String {
    inputs
        .iter()
        .map(|input| match parse(input) {
            Ok(ok) => format!("{input:?}\n  ok: {ok}"),
            Err(error) => format!("{input:?}\n  {error}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn gpu_uuid_errors() {
    let inputs = [
        "",
        "   ",
        "GPU-",
        "GPU-8932f937",
        "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6-00",
        "GPU-8932f937-d72c-4106-c12f-20bd9faed9fx",
        "GPU-8932f937d72c-4106-c12f-20bd9faed9f6-",
        "GPU-8932-f937-d72c-4106c12f20bd9faed9f6",
        "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
        "GPU-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
        "0",
    ];
    insta::assert_snapshot!(
        "gpu_uuid_errors",
        render(&inputs, |s| GpuUuid::parse(s).map(|u| u.to_string()))
    );
}

#[test]
fn mig_uuid_errors() {
    let inputs = [
        "",
        "GPU-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
        "MIG-",
        "MIG-c6d4f1ef",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0/2",
        "MIG-GPU-3eb79704/13/0",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/x/0",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/+1/0",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/99999999999/0",
    ];
    insta::assert_snapshot!(
        "mig_uuid_errors",
        render(&inputs, |s| MigUuid::parse(s).map(|u| u.to_string()))
    );
}

/// One value per stop reason, duplicate kind and warning kind, resolved on H8 (H1 for the
/// one-GPU wording).
#[test]
fn visibility_messages() {
    let values: &[(&str, &[u8])] = &[
        ("H8", b"0,,1"),
        ("H8", b",0"),
        ("H8", b"0,1,"),
        ("H8", b"1,-1,2"),
        ("H8", b"-1"),
        ("H8", b"0,one"),
        ("H8", b"all"),
        ("H8", b"3,void"),
        ("H8", b"NoDevFiles"),
        ("H8", b"deadbeef-0000-0000-0000-000000000000"),
        ("H8", b"0,GPU-9e8d35e3"),
        ("H8", b"0,MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"),
        ("H8", b"GPU-9e8d35e3,1"),
        ("H8", b"GPU-9e8d35e3,MIG-c6d4f1ef"),
        ("H8", b"MIG-c6d4f1ef,GPU-9e8d35e3"),
        ("H8", b" GPU-9e8d35e3"),
        ("H8", b"GPU-9e8d35e3 ,GPU-47"),
        ("H8", b"GPU-47, GPU-9e8d35e3"),
        ("H8", b"gpu-9e8d35e3"),
        ("H8", b"0,Gpu-9e8d35e3"),
        ("H8", b"3,8,1"),
        ("H1", b"1"),
        ("H8", b"GPU-123"),
        ("H8", b"GPU-47,GPU-9E8D"),
        ("H8", b"GPU-9e8d35e3,GPU-e,GPU-47"),
        ("H8", b"0,1,00"),
        ("H8", b"GPU-47,GPU-47"),
        ("H8", b"GPU-47,GPU-472ea263"),
        ("H8", b"1c20e77d-1c1a-d9ed-fe37-18b8466a78ad"),
        ("H8", b"9e8d35e3"),
        ("H8", b"0-2"),
        ("H8", b"1gpu2"),
        ("H8", b"\xff"),
    ];
    let mut out = Vec::new();
    for (host, value) in values {
        let table = if *host == "H1" {
            hosts::h1()
        } else {
            hosts::h8()
        };
        let devices = VisibleDevices::parse_bytes(Some(value));
        let value_text = String::from_utf8_lossy(value);
        let mut text = match resolve(&devices, &table) {
            Ok(resolution) => format!("{value_text:?} on {host} → {:?}", resolution.host_indices()),
            Err(error) => format!("{value_text:?} on {host} → error: {error}"),
        };
        for warning in devices.warnings() {
            let _ = write!(text, "\n  warning: {warning}");
        }
        let resolution = resolve(&devices, &table).ok();
        let stop = resolution.as_ref().map_or(devices.stop(), |r| r.stop());
        if let Some(stop) = stop {
            let _ = write!(text, "\n  stop ({:?}): {stop}", stop.reason);
        }
        let duplicate = resolution
            .as_ref()
            .map_or(devices.duplicate(), |r| r.duplicate());
        if let Some(duplicate) = duplicate {
            let _ = write!(text, "\n  duplicate ({:?}): {duplicate}", duplicate.same);
        }
        out.push(text);
    }
    insta::assert_snapshot!("visibility_messages", out.join("\n"));
}

#[test]
fn resolve_error_mig() {
    let devices = VisibleDevices::parse_bytes(Some(
        b"MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f,MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0,0",
    ));
    let error = resolve(&devices, &hosts::hm()).unwrap_err();
    insta::assert_snapshot!("resolve_error_mig", error.to_string());
}
