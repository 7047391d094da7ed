//! Device strings: `cuda` or `cuda:<decimal index>` (the seed's `_cuda_index`, made strict).

/// Which of the two processes a device belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Learner,
    Collector,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Learner => "learner",
            Self::Collector => "collector",
        }
    }
}

/// Why a device string is not a usable CUDA device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceError {
    /// Not `cuda` / `cuda:<something>` at all (e.g. `cpu`, `gpu:0`, `cuda:`).
    NotCuda,
    /// `cuda:<something>` whose index is not plain ASCII decimal digits that fit a `u32`.
    InvalidIndex,
}

/// The CUDA device index a device string names (`cuda` → 0, `cuda:N` → N), exactly as the
/// validator reads it; `None` for anything that is not a usable CUDA device. For a front end
/// that must ask something per index (the Python drop-in asks the caller's torch), so that it
/// never parses a device string again.
pub fn cuda_index(device: &str) -> Option<u32> {
    parse_cuda_index(device).ok()
}

/// Parses a device string. Surrounding whitespace is ignored and `cuda` is matched in any ASCII
/// case (as in the seed); the index must be ASCII digits only — no sign, underscore, inner
/// whitespace or non-ASCII digit (the seed's Python `int()` accepted all of those).
pub(crate) fn parse_cuda_index(device: &str) -> Result<u32, DeviceError> {
    // `cuda:<digit>`, as launchers write it, needs no trimming, splitting or number parsing.
    if let [b'c', b'u', b'd', b'a', b':', digit @ b'0'..=b'9'] = device.as_bytes() {
        return Ok(u32::from(digit - b'0'));
    }
    let value = device.trim();
    if value.eq_ignore_ascii_case("cuda") {
        return Ok(0);
    }
    let Some((base, index)) = value.split_once(':') else {
        return Err(DeviceError::NotCuda);
    };
    if !base.eq_ignore_ascii_case("cuda") || index.is_empty() {
        return Err(DeviceError::NotCuda);
    }
    if !index.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DeviceError::InvalidIndex);
    }
    index.parse::<u32>().map_err(|_| DeviceError::InvalidIndex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_index_is_the_validator_s_reading() {
        assert_eq!(cuda_index(" CUDA:12 "), Some(12));
        assert_eq!(cuda_index("cuda"), Some(0));
        for not in ["cpu", "cuda:", "cuda:-1", "cuda:\u{663}", "cuda:4294967296"] {
            assert_eq!(cuda_index(not), None, "{not:?}");
        }
    }

    #[test]
    fn accepts_cuda_forms() {
        assert_eq!(parse_cuda_index("cuda"), Ok(0));
        assert_eq!(parse_cuda_index(" CUDA "), Ok(0));
        assert_eq!(parse_cuda_index("cuda:0"), Ok(0));
        assert_eq!(parse_cuda_index("Cuda:3"), Ok(3));
        assert_eq!(parse_cuda_index("cuda:007"), Ok(7));
    }

    #[test]
    fn every_one_digit_index() {
        for (index, device) in (0..10).map(|i| (i, format!("cuda:{i}"))) {
            assert_eq!(parse_cuda_index(&device), Ok(index), "{device}");
            assert_eq!(
                parse_cuda_index(&device.to_uppercase()),
                Ok(index),
                "{device}"
            );
            assert_eq!(
                parse_cuda_index(&format!(" {device}\n")),
                Ok(index),
                "{device}"
            );
        }
    }

    #[test]
    fn rejects_other_families() {
        for device in ["cpu", "gpu:0", "cuda:", "", "mps", "cudax", "cuda0"] {
            assert_eq!(
                parse_cuda_index(device),
                Err(DeviceError::NotCuda),
                "{device:?}"
            );
        }
    }

    #[test]
    fn strict_decimal_only() {
        for device in [
            "cuda:x",
            "cuda:-1",
            "cuda:+1",
            "cuda:1_0",
            "cuda: 1",
            "cuda:-0",
            "cuda:٣",
            "cuda:1:2",
            "cuda:99999999999",
        ] {
            assert_eq!(
                parse_cuda_index(device),
                Err(DeviceError::InvalidIndex),
                "{device:?}"
            );
        }
    }
}
