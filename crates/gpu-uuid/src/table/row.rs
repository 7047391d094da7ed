//! One `nvidia-smi` output line as a row: splitting, trimming and each field's check.

use super::{GpuRowView, TABLE_COLUMNS};
use crate::uuid::GpuUuid;

/// The non-blank lines of `stdout` with their line numbers (from 1): the lines that must be rows.
pub(super) fn row_lines(stdout: &str) -> impl Iterator<Item = (usize, &str)> {
    stdout
        .lines()
        .enumerate()
        .filter(|(_, text)| !trim(text).is_empty())
        .map(|(number, text)| (number + 1, text))
}

pub(super) fn parse_row(text: &str) -> Result<GpuRowView<'_>, String> {
    // One pass: index and UUID up to the first two commas; the name up to the last comma
    // (it may hold commas itself); the PCI bus id after it.
    let mut parts = text.splitn(3, ',');
    let first = trim(parts.next().unwrap_or_default());
    if first.eq_ignore_ascii_case("index") {
        return Err(
            "is a header; pass `--format=csv,noheader` so only GPU rows are printed".to_owned(),
        );
    }
    // At least TABLE_COLUMNS.len() (4) fields: a comma after the second one.
    let (Some(uuid), Some((name, pci_bus_id))) = (
        parts.next(),
        parts.next().and_then(|rest| rest.rsplit_once(',')),
    ) else {
        let count = text.split(',').count();
        let fields = if count == 1 {
            "1 field".to_owned()
        } else {
            format!("{count} fields")
        };
        return Err(format!(
            "is not a GPU row: it has {fields} where the query prints {} ({})",
            TABLE_COLUMNS.len(),
            TABLE_COLUMNS.join(", ")
        ));
    };
    let (uuid, name, pci_bus_id) = (trim(uuid), trim(name), trim(pci_bus_id));
    let index = parse_index(first)?;
    let uuid = if uuid.starts_with("GPU-") {
        GpuUuid::parse(uuid).map_err(|e| format!("has a bad uuid field: {e}"))?
    } else {
        return Err(format!(
            "has {uuid:?} in the uuid field, which is not a `GPU-` UUID"
        ));
    };
    check_bus_id(pci_bus_id)?;
    check_name(name)?;
    Ok(GpuRowView {
        index,
        uuid,
        name,
        pci_bus_id,
    })
}

/// [`str::trim`], answered from the ASCII bytes at the ends when it can: `nvidia-smi` fields
/// are ASCII, and the Unicode search costs more than the rest of a row.
fn trim(field: &str) -> &str {
    let ascii = field.trim_ascii();
    // `trim_ascii` keeps U+000B, which `trim` removes; a non-ASCII end may be whitespace too.
    let settled = |b: &u8| b.is_ascii() && *b != 0x0b;
    if ascii.as_bytes().first().is_none_or(settled) && ascii.as_bytes().last().is_none_or(settled) {
        ascii
    } else {
        field.trim()
    }
}

pub(super) fn check_name(name: &str) -> Result<(), String> {
    if trim(name).is_empty() {
        Err("has an empty name field".to_owned())
    } else {
        Ok(())
    }
}

fn parse_index(field: &str) -> Result<u32, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "has {field:?} in the index field, which is not a number"
        ));
    }
    field
        .parse()
        .map_err(|_| format!("has index {field}, which is too large"))
}

/// `domain:bus:device.function`, hex: 4 or 8 domain digits, then 2, 2 and 1.
pub(super) fn check_bus_id(field: &str) -> Result<(), String> {
    // Hex digits hold no `:` or `.`, so the field is the domain and then exactly
    // `:BB:DD.F`: checked byte by byte, without splitting.
    let bytes = field.as_bytes();
    let ok = match bytes
        .len()
        .checked_sub(8)
        .and_then(|at| bytes.split_at_checked(at))
    {
        Some((domain, [b':', bus1, bus2, b':', dev1, dev2, b'.', function])) => {
            matches!(domain.len(), 4 | 8)
                && domain.iter().all(u8::is_ascii_hexdigit)
                && [bus1, bus2, dev1, dev2, function]
                    .into_iter()
                    .all(u8::is_ascii_hexdigit)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "has {field:?} in the pci.bus_id field, which is not a PCI bus id like 00000000:17:00.0"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split-based check that `check_bus_id` replaced, kept as its reference.
    fn reference(field: &str) -> bool {
        let hex = |s: &str, lens: &[usize]| {
            lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
        };
        let mut parts = field.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(domain), Some(bus), Some(rest), None) => match rest.split_once('.') {
                Some((device, function)) => {
                    hex(domain, &[4, 8])
                        && hex(bus, &[2])
                        && hex(device, &[2])
                        && hex(function, &[1])
                }
                None => false,
            },
            _ => false,
        }
    }

    #[test]
    fn trim_agrees_with_str_trim() {
        let ends = [
            "", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\u{a0}", "\u{3000}", "\u{85}", "é", "x",
        ];
        for head in ends {
            for tail in ends {
                for middle in ["", "a", " a b ", "\x0b"] {
                    let field = format!("{head}{middle}{tail}");
                    assert_eq!(trim(&field), field.trim(), "{field:?}");
                }
            }
        }
    }

    #[test]
    fn bus_id_check_agrees_with_splitting() {
        const ALPHABET: [char; 6] = ['0', 'F', 'g', ':', '.', 'é'];
        let mut fields = vec![String::new()];
        // Every string of up to 6 characters over the alphabet...
        let mut last = vec![String::new()];
        for _ in 0..6 {
            last = last
                .iter()
                .flat_map(|s| ALPHABET.iter().map(move |c| format!("{s}{c}")))
                .collect();
            fields.extend(last.iter().cloned());
        }
        // ...and every one-character change, insertion and deletion of valid ids.
        for valid in ["0000:17:00.0", "00000000:2A:0f.7"] {
            let chars: Vec<char> = valid.chars().collect();
            for at in 0..=chars.len() {
                let (head, tail) = chars.split_at(at);
                let (head, tail): (String, String) = (head.iter().collect(), tail.iter().collect());
                fields.push(format!(
                    "{head}{}",
                    tail.chars().skip(1).collect::<String>()
                ));
                for c in ALPHABET {
                    fields.push(format!("{head}{c}{tail}"));
                    fields.push(format!(
                        "{head}{c}{}",
                        tail.chars().skip(1).collect::<String>()
                    ));
                }
            }
        }
        let mut accepted = 0;
        for field in &fields {
            assert_eq!(check_bus_id(field).is_ok(), reference(field), "{field:?}");
            accepted += usize::from(reference(field));
        }
        assert!(accepted > 10, "only {accepted} valid ids were tried");
    }
}
