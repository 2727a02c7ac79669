//! Kubernetes resource quantities (`4`, `500m`, `8Gi`, `1e3`): the grammar Liqo's CRD accepts for a
//! `ResourceList` value, restricted to what Kubernetes keeps exactly (non-negative, integer exponents, no finer
//! than `1n`), and equality by value, because Liqo writes quantities back in canonical form (`1000m` → `1`).

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    mantissa: Option<u128>,
    exp10: i64,
    exp2: u32,
}

const BINARY: [(&str, u32); 6] = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50), ("Ei", 60)];
const DECIMAL: [(&str, i64); 9] =
    [("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];

pub fn parse(s: &str) -> Result<Parsed, String> {
    if s.is_empty() {
        return Err("is empty".into());
    }
    let body = match s.as_bytes()[0] {
        b'-' => return Err("is negative".into()),
        b'+' => &s[1..],
        _ => s,
    };
    let num_len = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
    let (number, suffix) = body.split_at(num_len);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return Err("does not start with a number".into());
    }
    if frac.contains('.') {
        return Err("has more than one decimal point".into());
    }
    let (exp10, exp2) = suffix_scale(suffix)?;
    let exp10 = exp10 - frac.len() as i64;
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    // More digits than u128 holds: valid, but only comparable by spelling.
    let mantissa = if digits.is_empty() { Some(0) } else { digits.parse::<u128>().ok() };
    let parsed = Parsed { mantissa, exp10, exp2 };
    if parsed.canonical().is_some_and(|(m, e)| m != 0 && e < -9) {
        return Err("is more precise than 1n (Kubernetes rounds such values up)".into());
    }
    Ok(parsed)
}

fn suffix_scale(suffix: &str) -> Result<(i64, u32), String> {
    if suffix.is_empty() {
        return Ok((0, 0));
    }
    if let Some((_, p)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        return Ok((0, *p));
    }
    if let Some((_, p)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        return Ok((*p, 0));
    }
    if let Some(exp) = suffix.strip_prefix(['e', 'E']) {
        let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        if !digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Ok((exp.parse::<i64>().map_err(|_| format!("has an invalid exponent `{suffix}`"))?, 0));
        }
        return Err(format!("has an invalid exponent `{suffix}` (write a whole number after e, like `1e3`)"));
    }
    Err(format!(
        "has an unknown suffix `{suffix}` (use Ki, Mi, Gi, Ti, Pi, Ei for powers of 1024; n, u, m, k, M, G, T, \
         P, E for powers of 1000; or an exponent like e3)"
    ))
}

impl Parsed {
    /// `(mantissa, exp10)` with the binary factor folded in and trailing zeros removed: equal values have
    /// equal canonical forms. None when it does not fit in 128 bits.
    fn canonical(&self) -> Option<(u128, i64)> {
        let mut m = self.mantissa?.checked_mul(1u128.checked_shl(self.exp2)?)?;
        let mut e = self.exp10;
        if m == 0 {
            return Some((0, 0));
        }
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        Some((m, e))
    }
}

/// True when both are valid quantities of the same value, or (when a value is too large to compare
/// exactly) spelled the same.
pub fn same(a: &str, b: &str) -> bool {
    match (parse(a).ok().and_then(|p| p.canonical()), parse(b).ok().and_then(|p| p.canonical())) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_the_kubernetes_grammar() {
        for ok in
            ["4", "500m", "8Gi", "1e3", "1E3", "0.5", ".5", "5.", "+2", "110", "1Ei", "1E", "2e-3", "100u", "1n", "0"]
        {
            assert!(parse(ok).is_ok(), "{ok} should parse");
        }
        for bad in ["", "-1", "8GB", "1.2.3", "Gi", "e3", "1e", "1e3.5", "4 ", " 4", "1ki", "0.1n", "1e-10", "abc"] {
            assert!(parse(bad).is_err(), "{bad} should be rejected");
        }
        assert!(same("1000m", "1"));
        assert!(same("1Gi", "1073741824"));
        assert!(same("1.5Gi", "1536Mi"));
        assert!(same("1e3", "1k"));
        assert!(same("0", "0m"));
        assert!(!same("1G", "1Gi"));
        assert!(!same("4", "8"));
    }
}
