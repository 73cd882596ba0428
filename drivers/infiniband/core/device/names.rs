// SPDX-License-Identifier: GPL-2.0

//! RDMA device names, assigned at registration and rename as the C core does: a name without
//! `%` is used as it is (and must not be taken); a template with one `%d` (`mlx5_%d`) gets the
//! lowest number that no registered device's name uses in that template.

use kernel::prelude::*;

/// Longest device name, with its terminating NUL (`IB_DEVICE_NAME_MAX`).
pub const NAME_MAX: usize = 64;

/// A parsed name or template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template<'a> {
    /// A name used as given.
    Fixed(&'a [u8]),
    /// `prefix%dsuffix`.
    Numbered {
        /// What comes before the number.
        prefix: &'a [u8],
        /// What comes after it.
        suffix: &'a [u8],
    },
}

/// Parses `t`: no `%` at all, or exactly one `%d`. Empty names, other conversions and names
/// that cannot fit are `EINVAL`.
pub fn parse(t: &[u8]) -> Result<Template<'_>> {
    if t.is_empty() || t.len() >= NAME_MAX || t.contains(&0) || t.contains(&b'/') {
        return Err(EINVAL);
    }
    let Some(at) = t.iter().position(|&c| c == b'%') else {
        return Ok(Template::Fixed(t));
    };
    if t.get(at + 1) != Some(&b'd') || t[at + 2..].contains(&b'%') {
        return Err(EINVAL);
    }
    Ok(Template::Numbered {
        prefix: &t[..at],
        suffix: &t[at + 2..],
    })
}

/// The number `name` carries in template `prefix%dsuffix`, if it is written exactly as the
/// template would write it (no sign, no leading zero).
pub fn number_in(name: &[u8], prefix: &[u8], suffix: &[u8]) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut n: u32 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
    }
    (n < i32::MAX as u32).then_some(n)
}

/// A device name, kept inline with room for its NUL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name {
    buf: [u8; NAME_MAX],
    len: u8,
}

impl Name {
    /// `name` as a device name: `EINVAL` when empty, too long, or holding a NUL.
    pub fn new(name: &[u8]) -> Result<Self> {
        if name.is_empty() || name.len() >= NAME_MAX || name.contains(&0) {
            return Err(EINVAL);
        }
        let mut buf = [0u8; NAME_MAX];
        buf[..name.len()].copy_from_slice(name);
        Ok(Self {
            buf,
            len: name.len() as u8,
        })
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    /// The name with its NUL.
    pub fn as_c_str(&self) -> &CStr {
        // The buffer holds no NUL before `len` and is zero from there, with room for one.
        CStr::from_bytes_with_nul(&self.buf[..=usize::from(self.len)]).unwrap_or(c"")
    }
}

impl core::ops::Deref for Name {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The name a device registering (or renamed) with `template` gets, given the names already
/// taken. A fixed name already taken is `ENFILE`, as in C.
pub fn assign<'a>(template: &[u8], taken: impl Iterator<Item = &'a [u8]>) -> Result<Name> {
    match parse(template)? {
        Template::Fixed(name) => {
            let mut taken = taken;
            if taken.any(|t| t == name) {
                return Err(ENFILE);
            }
            Name::new(name)
        }
        Template::Numbered { prefix, suffix } => {
            let mut used = KVec::new();
            for t in taken {
                if let Some(n) = number_in(t, prefix, suffix) {
                    used.push(n, GFP_KERNEL)?;
                }
            }
            // The lowest number not used: at most `used.len()`, found with one mark per
            // number (no sort: core's sort ends in a panic objtool does not know).
            let mut seen = KVec::from_elem(false, used.len() + 1, GFP_KERNEL)?;
            for &u in used.iter() {
                if let Some(s) = usize::try_from(u).ok().and_then(|u| seen.get_mut(u)) {
                    *s = true;
                }
            }
            let n = seen.iter().position(|s| !s).unwrap_or(used.len()) as u32;
            let mut digits = [0u8; 10];
            let mut k = digits.len();
            let mut v = n;
            loop {
                k -= 1;
                digits[k] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            let mut out = [0u8; NAME_MAX];
            let mut len = 0;
            for part in [prefix, &digits[k..], suffix] {
                let end = len + part.len();
                if end >= NAME_MAX {
                    return Err(EINVAL);
                }
                out[len..end].copy_from_slice(part);
                len = end;
            }
            Name::new(&out[..len])
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_names)]
mod tests {
    use super::*;

    fn names<'a>(v: &'a [&'a str]) -> impl Iterator<Item = &'a [u8]> + 'a {
        v.iter().map(|s| s.as_bytes())
    }

    #[test]
    fn templates_take_the_lowest_free_number() {
        assert_eq!(&assign(b"mlx5_%d", names(&[])).unwrap()[..], b"mlx5_0");
        assert_eq!(
            &assign(b"mlx5_%d", names(&["mlx5_0", "mlx5_1"])).unwrap()[..],
            b"mlx5_2"
        );
        // A hole left by an unregistered device is reused first.
        assert_eq!(
            &assign(b"mlx5_%d", names(&["mlx5_0", "mlx5_2", "rxe0"])).unwrap()[..],
            b"mlx5_1"
        );
        // Names that merely look alike do not count: other prefixes, leading zeros.
        assert_eq!(
            &assign(b"mlx5_%d", names(&["mlx5_01", "mlx4_0", "mlx5_x"])).unwrap()[..],
            b"mlx5_0"
        );
        assert_eq!(
            &assign(b"dev%dx", names(&["dev0x", "dev1x", "dev2"])).unwrap()[..],
            b"dev2x"
        );
        assert_eq!(
            &assign(b"mlx5_%d", names(&["mlx5_9", "mlx5_10", "mlx5_0"])).unwrap()[..],
            b"mlx5_1"
        );
    }

    #[test]
    fn fixed_names_are_used_once() {
        assert_eq!(
            &assign(b"ibtest", names(&["other"])).unwrap()[..],
            b"ibtest"
        );
        assert_eq!(assign(b"ibtest", names(&["ibtest"])), Err(ENFILE));
    }

    #[test]
    fn bad_templates_are_refused() {
        assert_eq!(parse(b""), Err(EINVAL));
        assert_eq!(parse(b"a%s"), Err(EINVAL));
        assert_eq!(parse(b"a%d%d"), Err(EINVAL));
        assert_eq!(parse(b"a/b"), Err(EINVAL));
        assert_eq!(parse(&[b'a'; NAME_MAX]), Err(EINVAL));
        assert_eq!(number_in(b"mlx5_-1", b"mlx5_", b""), None);
        assert_eq!(number_in(b"mlx5_99999999999", b"mlx5_", b""), None);
        assert_eq!(number_in(b"mlx5_42", b"mlx5_", b""), Some(42));
    }
}
