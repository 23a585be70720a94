//! The names a bridged server's tools are served under (seed 004's rule).
//!
//! `<server>__<tool>` (the tool's own name with `namespace: false`); each character outside
//! `[A-Za-z0-9_-]` becomes `_`; a name over 64 characters becomes its first 55, `_` and 8 hex
//! digits of the SHA-256 of the unmangled name, so long names stay distinct.

use crate::util::hash::sha256_hex;

/// The most characters a served name has.
pub(crate) const MAX_NAME: usize = 64;

/// The served name of `tool` of `server`.
pub(crate) fn served_name(server: &str, tool: &str, namespace: bool) -> String {
    let original = if namespace {
        format!("{server}__{tool}")
    } else {
        tool.to_owned()
    };
    let clean: String = original
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        return clean;
    }
    format!("{}_{}", &clean[..55], &sha256_hex(&original)[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_unless_namespace_is_off() {
        assert_eq!(served_name("everything", "echo", true), "everything__echo");
        assert_eq!(served_name("everything", "echo", false), "echo");
    }

    #[test]
    fn characters_outside_the_set_become_underscores() {
        assert_eq!(served_name("s", "a.b/c d-é", true), "s__a_b_c_d-_");
    }

    #[test]
    fn long_names_are_cut_with_a_hash_of_the_original() {
        let tool = "t".repeat(80);
        let name = served_name("server", &tool, true);
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.starts_with(&format!("server__{}", "t".repeat(47))));
        assert_eq!(&name[55..56], "_");
        assert_eq!(&name[56..], &sha256_hex(&format!("server__{tool}"))[..8]);
        assert_ne!(name, served_name("server", &format!("{tool}x"), true));
    }
}
