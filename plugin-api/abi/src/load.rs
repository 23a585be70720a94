//! Opening a plugin's root module across versions of one ABI line, in both directions.
//!
//! abi_stable's own check ([`LibHeader::init_root_module`]) takes the host for the older side:
//! it refuses a library whose version is lower than the host's, and a library whose prefix
//! types (the root module and every `#[sabi_trait]` vtable) have fewer fields than the host's
//! ("too many fields"). That suits a library that only ever grows, but here the host grows
//! too: it implements [`HostContext`](crate::HostContext), and calls methods appended to
//! [`PluginInstance`](crate::PluginInstance). So [`root_module`] checks the layouts with the
//! older side as the interface: the plugin's when the plugin is the older (or the same
//! version), the host's when the host is. Either way every prefix type of the newer side is
//! the older side's plus fields at the end, and every other type is the same; a method the
//! older side lacks is answered by its default body, since abi_stable's accessors check the
//! vtable's length at each call. A library that fits neither way (a type changed, a field
//! removed) is refused.

use std::fmt;

use abi_stable::{
    StableAbi,
    abi_stability::check_layout_compatibility,
    library::{LibHeader, LibraryError},
    type_layout::TypeLayout,
};

use crate::PluginModRef;

/// Why a plugin library's root module could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The library says no version, or one this host does not read.
    Version {
        /// What the library's header says.
        library: String,
    },
    /// The library is of another ABI line: another minor in `0.x`, another major after.
    OtherLine {
        /// The library's version.
        library: String,
    },
    /// The library's types do not fit this host's in either direction.
    Layout {
        /// The library's version.
        library: String,
        /// abi_stable's account of the first difference, several lines long.
        details: String,
    },
    /// The library has no layout to check (built with abi_stable's checks turned off).
    Unchecked {
        /// The library's version.
        library: String,
    },
    /// The library's root-module constructor failed.
    Init(LibraryError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = crate::VERSION;
        match self {
            Self::Version { library } => {
                write!(
                    f,
                    "the library's plugin-abi version `{library}` does not read"
                )
            }
            Self::OtherLine { library } => write!(
                f,
                "built against plugin-abi {library}, another ABI line than this host's \
                 plugin-abi {host}"
            ),
            Self::Layout { library, details } => write!(
                f,
                "built against plugin-abi {library}, whose types do not fit this host's \
                 (plugin-abi {host}): {}",
                layout_summary(details)
            ),
            Self::Unchecked { library } => write!(
                f,
                "built against plugin-abi {library} without abi_stable's layout constants, so \
                 its types cannot be checked"
            ),
            Self::Init(error) => write!(f, "its root module failed to initialise: {error}"),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Init(error) => Some(error),
            _ => None,
        }
    }
}

/// The gist of abi_stable's account of a layout mismatch, which runs to tens of kilobytes:
/// each error it ends with, the type it is about, and what was expected and found
/// ("too many fields in `plugin_abi::PluginInstance_trait::VTable`: expected 12, found 11").
fn layout_summary(details: &str) -> String {
    let lines: Vec<&str> = details.lines().map(str::trim).collect();
    let mut errors = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(error) = line.strip_prefix("Error:") else {
            continue;
        };
        let after = |label: &str| {
            let from = lines[at..].iter().position(|l| *l == label)? + at + 1;
            lines.get(from).copied()
        };
        // The type is the one of the last layout shown before the error.
        let layout = lines[..at]
            .iter()
            .rposition(|l| *l == "--- Type Layout ---");
        let shown = layout.map_or(&[][..], |from| &lines[from..at]);
        let module = shown.iter().find_map(|l| l.split_once(" mod:"));
        let ty = shown.iter().find_map(|l| l.strip_prefix("type:"));
        let mut summary = error.trim().to_owned();
        if let (Some(ty), Some((_, module))) = (ty, module) {
            summary.push_str(&format!(" in `{module}::{ty}`"));
        }
        if let (Some(expected), Some(found)) = (after("Expected:"), after("Found:")) {
            summary.push_str(&format!(": expected {expected}, found {found}"));
        }
        errors.push(summary);
    }
    if errors.is_empty() {
        return "abi_stable's layout check failed (its account is logged at debug level)".into();
    }
    errors.join("; ")
}

/// A version as (major, minor, patch), if it reads as one (pre-release and build tags are
/// ignored).
pub fn parse_version(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
}

/// The ABI line of a version: its major, and its minor while the major is 0.
fn line((major, minor, _): (u64, u64, u64)) -> (u64, u64) {
    (major, if major == 0 { minor } else { 0 })
}

/// The ABI line of `version` as people write it: `0.2.x`, `1.x`; the version itself when it
/// does not read.
///
/// ```
/// assert_eq!(plugin_abi::line_name("0.2.1"), "0.2.x");
/// assert_eq!(plugin_abi::line_name("1.4.0"), "1.x");
/// ```
pub fn line_name(version: &str) -> String {
    match parse_version(version) {
        Some((0, minor, _)) => format!("0.{minor}.x"),
        Some((major, _, _)) => format!("{major}.x"),
        None => version.to_owned(),
    }
}

/// Checks the root module of the library behind `header` against this host's, in the
/// direction its version calls for, then initialises it and returns it.
pub fn root_module(header: &LibHeader) -> Result<PluginModRef, OpenError> {
    let library = header.version_strings().version.to_string();
    let Some(library_version) = parse_version(&library) else {
        return Err(OpenError::Version { library });
    };
    let host_version = parse_version(crate::VERSION).expect("plugin-abi's own version reads");
    if line(library_version) != line(host_version) {
        return Err(OpenError::OtherLine { library });
    }
    let Some(theirs) = header.layout() else {
        return Err(OpenError::Unchecked { library });
    };
    let ours = <PluginModRef as StableAbi>::LAYOUT;
    let library_is_older = library_version <= host_version;
    if let Err(details) = check_both_ways(ours, theirs, library_is_older) {
        return Err(OpenError::Layout { library, details });
    }
    // SAFETY: `check_both_ways` found the library's root module layout compatible with ours,
    // with the older side as the interface: every type is the same but for fields appended to
    // prefix types, which abi_stable's accessors check at each use.
    unsafe { header.unchecked_layout::<PluginModRef>() }
        .map_err(|e| OpenError::Init(e.into_library_error::<PluginModRef>()))
}

/// Checks `ours` and `theirs` with the older side as the interface, and if that fails the
/// other way round (two builds of one version that differ, one of them appended to without a
/// new version); the first way's error when neither passes.
fn check_both_ways(
    ours: &'static TypeLayout,
    theirs: &'static TypeLayout,
    library_is_older: bool,
) -> Result<(), String> {
    let (first, second) = if library_is_older {
        ((theirs, ours), (ours, theirs))
    } else {
        ((ours, theirs), (theirs, ours))
    };
    let first_error = match check_layout_compatibility(first.0, first.1).into_result() {
        Ok(()) => return Ok(()),
        Err(error) => error.to_string(),
    };
    match check_layout_compatibility(second.0, second.1).into_result() {
        Ok(()) => Ok(()),
        Err(_) => Err(first_error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_with_or_without_tags() {
        assert_eq!(parse_version("0.2.1"), Some((0, 2, 1)));
        assert_eq!(parse_version("1.0.0-rc.1+build"), Some((1, 0, 0)));
        assert_eq!(parse_version("0.2"), None);
        assert_eq!(parse_version("0.2.1.4"), None);
        assert_eq!(parse_version("zero"), None);
    }

    #[test]
    fn a_line_is_the_minor_in_zero_x_and_the_major_after() {
        assert_eq!(line((0, 2, 1)), line((0, 2, 0)));
        assert_ne!(line((0, 3, 0)), line((0, 2, 9)));
        assert_eq!(line((2, 0, 0)), line((2, 5, 1)));
        assert_ne!(line((2, 0, 0)), line((1, 9, 0)));
    }

    /// The end of abi_stable's account of a plugin of 0.2.0's commit on a host whose
    /// `PluginInstance` has `retire` (abi_stable's own check, before `root_module`).
    const ACCOUNT: &str = "Layout of expected type:
    --- Type Layout ---
    type:VTable
    size:64 align:8
    package:'plugin-abi' version:'0.2.0'
    line:57 mod:plugin_abi::PluginInstance_trait
    data:
        Prefix type:
            field_name:retire
            type:AFunctionPointer
Layout of found type:
    --- Type Layout ---
    type:VTable
    line:57 mod:plugin_abi::PluginInstance_trait
    data:
        Prefix type:
            field_name:read_resource_in
            type:AFunctionPointer
            package:'abi_stable' version:'0.11.3'



Error:too many fields
Expected:
    12
Found:
    11

";

    #[test]
    fn a_layout_error_says_what_differs_where_with_both_versions() {
        let error = OpenError::Layout {
            library: "0.2.0".into(),
            details: ACCOUNT.into(),
        };
        assert_eq!(
            error.to_string(),
            format!(
                "built against plugin-abi 0.2.0, whose types do not fit this host's (plugin-abi \
                 {}): too many fields in `plugin_abi::PluginInstance_trait::VTable`: expected \
                 12, found 11",
                crate::VERSION
            )
        );
        assert_eq!(
            layout_summary("no account"),
            "abi_stable's layout check failed (its account is logged at debug level)"
        );
    }
}
