//! Who a request comes from, and how far that caller may reach: an [`Identity`] and its
//! [`Bound`], which narrows a request's selection as the operator's flags do, never widening it.

use std::{collections::BTreeSet, sync::Arc};

use crate::{
    registry::Registry,
    selection::{ActiveSet, Resolution, ToolFilter},
};

/// How a caller proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Proof {
    /// An API key from the keys file.
    Key,
    /// An OAuth access token (a JWT the issuer signed).
    OAuth,
    /// The parent of an isolated plugin said so, having checked the credential itself.
    Relayed,
}

/// The caller of a request: its name (the key's tenant, or the token's subject), its scopes
/// (OAuth only), and what it may be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The key's name, or the token's `sub` (`client_id` when it has none).
    pub(crate) name: String,
    /// The token's scopes; none for a key.
    pub(crate) scopes: Vec<String>,
    /// How the caller proved who it is.
    pub(crate) proof: Proof,
    /// What the caller may be served at most.
    pub(crate) bound: Bound,
    /// Its token's claims (OAuth only), as policy rules read them.
    pub(crate) claims: Option<Arc<TokenClaims>>,
}

/// The claims of a caller's access token, as policy rules read them (`jwt.email`,
/// `jwt.groups`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenClaims {
    /// Every claim of the token, by name.
    pub(crate) values: serde_json::Map<String, serde_json::Value>,
    /// `values` as JSON text: what a policy's decision for the caller is kept under.
    pub(crate) text: String,
}

impl TokenClaims {
    /// The claims `values`.
    pub fn new(values: serde_json::Map<String, serde_json::Value>) -> Self {
        let text = serde_json::Value::Object(values.clone()).to_string();
        Self { values, text }
    }
}

impl Identity {
    /// What a session opened by this caller is bound to: another caller presenting its id is
    /// told the session does not exist. A key's tenant and a token's subject never match.
    pub(crate) fn owner(&self) -> String {
        match self.proof {
            Proof::Key => format!("key:{}", self.name),
            Proof::OAuth => format!("oauth:{}", self.name),
            Proof::Relayed => format!("relayed:{}", self.name),
        }
    }
}

/// The upper bound of what one caller is served: the toolsets it may use (`None`: any), and
/// read-only tools only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Bound {
    /// The toolsets the caller may use; `None` for every toolset.
    pub(crate) toolsets: Option<BTreeSet<String>>,
    /// Only tools annotated `readOnlyHint: true`.
    pub(crate) readonly: bool,
}

impl Bound {
    /// A bound to these toolsets, `*` standing for every toolset.
    pub(crate) fn new<S: AsRef<str>>(toolsets: &[S], readonly: bool) -> Self {
        let any = toolsets.iter().any(|t| t.as_ref() == "*");
        Self {
            toolsets: (!any).then(|| toolsets.iter().map(|t| t.as_ref().to_owned()).collect()),
            readonly,
        }
    }

    /// Whether the caller may use `toolset`.
    pub(crate) fn allows_toolset(&self, toolset: &str) -> bool {
        self.toolsets.as_ref().is_none_or(|t| t.contains(toolset))
    }

    /// Whether the caller may be served a tool of `toolset` whose read-only annotation (as its
    /// extensions leave it) is `read_only`.
    pub(crate) fn allows_tool(&self, toolset: &str, read_only: bool) -> bool {
        self.allows_toolset(toolset) && (read_only || !self.readonly)
    }

    /// Whether the caller may learn of the plugin called `name` (its processes, its failures,
    /// its conflicts, its pending extensions): it may use one of the plugin's toolsets or a
    /// tool the plugin extends.
    pub(crate) fn sees_plugin(&self, registry: &Registry, name: &str) -> bool {
        let Some(plugin) = registry.plugin(name) else {
            return false;
        };
        let manifest = &plugin.manifest;
        self.toolsets.is_none()
            || manifest
                .toolsets
                .iter()
                .any(|t| self.allows_toolset(&t.name))
            || manifest.extends.iter().any(|extension| {
                registry
                    .tools()
                    .iter()
                    .any(|t| t.decl.name == extension.tool && self.allows_toolset(&t.decl.toolset))
            })
    }

    /// `resolution` narrowed to this bound: its active set less the toolsets the caller may not
    /// use (always-on ones too), its filter read-only if the bound is.
    #[must_use]
    pub(crate) fn narrow(&self, mut resolution: Resolution) -> Resolution {
        if let Some(toolsets) = &self.toolsets {
            resolution.active = resolution
                .active
                .intersection(&ActiveSet::from_names(toolsets.iter().cloned()));
        }
        if self.readonly {
            resolution.filter = resolution.filter.narrow(ToolFilter::new(None, &[], true));
        }
        resolution
    }

    /// A string equal for equal bounds and different otherwise, to key caches by. Toolset
    /// names hold no `,` (names split on it), so the join is unambiguous.
    pub(crate) fn cache_key(&self) -> String {
        let toolsets = match &self.toolsets {
            None => "*".to_owned(),
            Some(t) => t.iter().cloned().collect::<Vec<_>>().join(","),
        };
        format!("{}{toolsets}", if self.readonly { "r:" } else { "w:" })
    }
}

/// The identity of a request, handed down through the request's extensions: `None` when the
/// server runs without authentication.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestIdentity(pub(crate) Option<std::sync::Arc<Identity>>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::{Declared, Query, resolve};

    const DECLARED: &[Declared<'static>] = &[
        Declared {
            name: "benchmarks",
            default: true,
            always: false,
        },
        Declared {
            name: "core",
            default: true,
            always: true,
        },
        Declared {
            name: "sandboxes",
            default: false,
            always: false,
        },
    ];

    fn active(bound: &Bound, query: &str) -> Vec<String> {
        let resolution = bound.narrow(resolve(&Query::parse(query), DECLARED, None));
        resolution.active.iter().cloned().collect()
    }

    #[test]
    fn a_bound_narrows_the_urls_choice_and_never_widens_it() {
        let bound = Bound::new(&["benchmarks", "sandboxes"], false);
        assert_eq!(active(&bound, ""), ["benchmarks"], "always-on ones too");
        assert_eq!(active(&bound, "sandboxes"), ["benchmarks", "sandboxes"]);
        assert_eq!(active(&bound, "only=sandboxes"), ["sandboxes"]);
        assert!(active(&Bound::new(&["nope"], false), "").is_empty());
        assert_eq!(
            active(&Bound::new(&["*"], false), ""),
            ["benchmarks", "core"]
        );
    }

    #[test]
    fn a_readonly_bound_filters_tools() {
        let bound = Bound::new(&["*"], true);
        let resolution = bound.narrow(resolve(&Query::parse(""), DECLARED, None));
        assert!(resolution.filter.allows("list", true));
        assert!(!resolution.filter.allows("launch", false));
    }

    #[test]
    fn a_read_only_bound_allows_read_only_tools_of_its_toolsets() {
        let reader = Bound::new(&["a"], true);
        assert!(reader.allows_tool("a", true));
        assert!(!reader.allows_tool("a", false));
        assert!(!reader.allows_tool("b", true));
        assert!(Bound::new(&["*"], false).allows_tool("b", false));
    }

    #[test]
    fn cache_keys_differ_with_the_bound() {
        let keys = [
            Bound::new(&["*"], false).cache_key(),
            Bound::new(&["*"], true).cache_key(),
            Bound::new(&["a"], false).cache_key(),
            Bound::new(&["a", "b"], false).cache_key(),
            Bound::new::<&str>(&[], false).cache_key(),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            Bound::new(&["b", "a"], false).cache_key(),
            Bound::new(&["a", "b"], false).cache_key()
        );
    }
}
