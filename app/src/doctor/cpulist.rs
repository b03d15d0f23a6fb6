//! CPU lists as Linux and EAL write them: `0-3,5,7-8`.

/// Parses a CPU list (`0-3,5`), sorted and without duplicates. An empty or
/// blank string is the empty list (e.g. `/sys/devices/system/cpu/isolated`).
pub fn parse(s: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{part}` is not a CPU number or range"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b || b - a > 4095 {
            return Err(format!("`{part}` is not an increasing range"));
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses a hexadecimal CPU mask (`0x3`, `f0`), lowest bit = CPU 0.
pub fn parse_mask(s: &str) -> Result<Vec<u32>, String> {
    let hex = s.trim().trim_start_matches("0x").trim_start_matches("0X");
    if hex.is_empty() {
        return Err(format!("`{s}` is not a hexadecimal mask"));
    }
    let mut cpus = Vec::new();
    for (i, c) in hex.chars().rev().enumerate() {
        let nibble = c
            .to_digit(16)
            .ok_or_else(|| format!("`{s}` is not a hexadecimal mask"))?;
        for bit in 0..4 {
            if nibble & (1 << bit) != 0 {
                cpus.push(i as u32 * 4 + bit);
            }
        }
    }
    Ok(cpus)
}

/// Formats CPUs as a compact list (`0-3,5`), the inverse of [`parse`].
pub fn format(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse(" 7 , 2-3\n").unwrap(), vec![2, 3, 7]);
        assert_eq!(parse("").unwrap(), Vec::<u32>::new());
        assert!(parse("3-1").is_err());
        assert!(parse("a").is_err());
    }

    #[test]
    fn masks() {
        assert_eq!(parse_mask("0x3").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("f0").unwrap(), vec![4, 5, 6, 7]);
        assert_eq!(parse_mask("0x100").unwrap(), vec![8]);
        assert!(parse_mask("0xg").is_err());
        assert!(parse_mask("").is_err());
    }

    #[test]
    fn format_round_trips() {
        assert_eq!(format(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format(&[4]), "4");
        assert_eq!(parse(&format(&[1, 2, 9])).unwrap(), vec![1, 2, 9]);
    }
}
