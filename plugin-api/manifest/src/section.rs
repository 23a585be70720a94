//! The framing of a manifest inside its link section.
//!
//! A record is `MAGIC`, the JSON length as a little-endian `u32`, then the JSON. Linkers may pad
//! a section with zeros, so [`decode`] skips zero bytes between records. The host reads the
//! section bytes with an object-file parser; this module only frames and unframes them.

/// The section name on ELF and PE (at most 8 bytes, as PE requires).
pub const SECTION: &str = ".rmcpmf";
/// The section name on Mach-O (`__DATA,__rmcpmf`).
pub const MACHO_SECTION: &str = "__rmcpmf";
/// The bytes that open every record.
pub const MAGIC: [u8; 8] = *b"RMCPMF\0\x01";

/// Frames a manifest's JSON as one record.
pub fn encode(json: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + json.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

/// Why a section's bytes hold no usable manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SectionError {
    /// The section holds no record.
    Empty,
    /// A record does not start with [`MAGIC`] (another format, or a newer framing).
    BadMagic,
    /// A record claims more bytes than the section holds.
    Truncated,
    /// A record's JSON is not UTF-8.
    NotUtf8,
    /// The section holds more than one record: two plugins linked into one library.
    Several(usize),
}

impl std::fmt::Display for SectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("the manifest section is empty"),
            Self::BadMagic => {
                f.write_str("the manifest section does not start with the expected magic bytes")
            }
            Self::Truncated => f.write_str("the manifest section is truncated"),
            Self::NotUtf8 => f.write_str("the manifest is not UTF-8"),
            Self::Several(n) => {
                write!(f, "the library holds {n} manifests; one plugin per library")
            }
        }
    }
}

impl std::error::Error for SectionError {}

/// Unframes the one manifest record in a section's bytes.
pub fn decode(mut bytes: &[u8]) -> Result<&str, SectionError> {
    let mut found = Vec::new();
    loop {
        while let [0, rest @ ..] = bytes {
            bytes = rest;
        }
        if bytes.is_empty() {
            break;
        }
        let rest = bytes.strip_prefix(&MAGIC).ok_or(SectionError::BadMagic)?;
        let (len, rest) = rest
            .split_first_chunk::<4>()
            .ok_or(SectionError::Truncated)?;
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err(SectionError::Truncated);
        }
        let (json, rest) = rest.split_at(len);
        found.push(std::str::from_utf8(json).map_err(|_| SectionError::NotUtf8)?);
        bytes = rest;
    }
    match found.as_slice() {
        [] => Err(SectionError::Empty),
        [one] => Ok(one),
        many => Err(SectionError::Several(many.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_padding() {
        let mut bytes = vec![0, 0];
        bytes.extend(encode(r#"{"name":"x"}"#));
        bytes.extend([0; 5]);
        assert_eq!(decode(&bytes), Ok(r#"{"name":"x"}"#));
    }

    #[test]
    fn bad_sections_say_why() {
        assert_eq!(decode(&[0, 0]), Err(SectionError::Empty));
        assert_eq!(decode(b"nonsense"), Err(SectionError::BadMagic));
        let record = encode("{}");
        assert_eq!(
            decode(&record[..record.len() - 1]),
            Err(SectionError::Truncated)
        );
        let two = [record.clone(), record].concat();
        assert_eq!(decode(&two), Err(SectionError::Several(2)));
    }
}
