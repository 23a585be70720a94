//! The server as an OAuth 2.1 resource server (the MCP authorization specification): the
//! protected resource metadata it serves (RFC 9728), the identity an access token gives, and the
//! scope a toolset needs, for the `insufficient_scope` step-up challenge.
//!
//! Scopes map to toolsets (`--oauth-scopes tools:read=benchmarks,admin=*`): a token's bound is
//! the toolsets of its scopes. Without a mapping a token reaches every toolset the operator
//! serves.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use jsonwebtoken::jwk::Jwk;
use serde_json::{Value, json};

use super::{
    identity::{Bound, Identity, Proof},
    jwks::Jwks,
    jwt,
};
use crate::util::lock::lock;

/// The OAuth options: a plain value, from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// The authorization server whose tokens are accepted (`--oauth-issuer`).
    pub issuer: String,
    /// This server's resource identifier, which tokens must name in `aud`
    /// (`--oauth-audience`); by default the URL a client reaches the MCP endpoint at.
    pub audience: Option<String>,
    /// Which toolsets each scope opens (`--oauth-scopes scope=toolset`), `*` for every one.
    pub scopes: Vec<(String, String)>,
    /// How often the issuer's keys are fetched again (`--oauth-jwks-refresh`): a key the
    /// issuer dropped is refused from then on, for tokens checked before too.
    pub jwks_refresh: Duration,
}

/// How often the issuer's keys are fetched again unless `--oauth-jwks-refresh` says otherwise.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(300);

/// An `--oauth-scopes` entry that is not `scope=toolset`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not `scope=toolset` (`*` for every toolset)")]
pub(crate) struct ScopeError(String);

/// Parses one `--oauth-scopes` entry, `scope=toolset`.
pub(crate) fn parse_scope(entry: &str) -> Result<(String, String), ScopeError> {
    match entry.split_once('=') {
        Some((scope, toolset)) if !scope.trim().is_empty() && !toolset.trim().is_empty() => {
            Ok((scope.trim().to_owned(), toolset.trim().to_owned()))
        }
        _ => Err(ScopeError(entry.to_owned())),
    }
}

/// A token checked before: the resource it was checked for, the caller it gives, its `exp`,
/// and the key that signed it.
type Checked = (String, Arc<Identity>, i64, Jwk);

/// How many checked tokens are remembered; beyond it they are all forgotten at once.
const REMEMBERED: usize = 1024;

/// Accepts access tokens of one issuer.
#[derive(Debug)]
pub struct OAuth {
    options: OAuthOptions,
    jwks: Arc<Jwks>,
    /// Tokens already checked, with the caller each gives and its `exp`: a client sends the same
    /// token with every request, and its signature need not be checked again while it is valid.
    checked: Mutex<HashMap<String, Checked>>,
}

impl OAuth {
    /// Whether scopes are mapped to toolsets (`--oauth-scopes`): only then can a caller be
    /// asked to step up.
    pub(crate) fn maps_scopes(&self) -> bool {
        !self.options.scopes.is_empty()
    }

    /// A resource server trusting `options.issuer`; nothing is fetched yet.
    pub(crate) fn new(options: OAuthOptions) -> Self {
        Self::with_jwks(Jwks::new(&options.issuer), options)
    }

    /// A resource server trusting `options.issuer` with these keys (a test's, a benchmark's).
    pub fn with_jwks(jwks: Jwks, options: OAuthOptions) -> Self {
        Self {
            jwks: Arc::new(jwks),
            options,
            checked: Mutex::default(),
        }
    }

    /// The issuer's keys, to fetch at start-up and every [`OAuth::jwks_refresh`].
    pub(crate) fn jwks(&self) -> &Arc<Jwks> {
        &self.jwks
    }

    /// How often the issuer's keys are fetched again.
    pub(crate) fn jwks_refresh(&self) -> Duration {
        self.options.jwks_refresh
    }

    /// The audience tokens must name: `--oauth-audience`, else `default_resource`.
    pub(crate) fn resource<'a>(&'a self, default_resource: &'a str) -> &'a str {
        self.options.audience.as_deref().unwrap_or(default_resource)
    }

    /// The caller a token gives, checked against `resource`; or why it is refused. A token
    /// checked before for the same resource, not expired since, and whose key the issuer still
    /// publishes, is not checked again.
    pub async fn identify(
        &self,
        token: &str,
        resource: &str,
    ) -> Result<Arc<Identity>, jwt::TokenError> {
        if let Some((checked_for, identity, exp, key)) = self.remembered().get(token)
            && checked_for == resource
            && super::keys::now() < *exp
            && self.jwks.holds(key)
        {
            return Ok(Arc::clone(identity));
        }
        let (claims, key) = jwt::check(token, &self.jwks, &self.options.issuer, resource).await?;
        let scopes = claims.scopes();
        let identity = Arc::new(Identity {
            name: claims.name(),
            bound: self.bound(&scopes),
            scopes,
            proof: Proof::OAuth,
            claims: Some(Arc::new(claims.all())),
        });
        if let Some(exp) = claims.exp {
            let mut remembered = self.remembered();
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.insert(
                token.to_owned(),
                (resource.to_owned(), Arc::clone(&identity), exp, key),
            );
        }
        Ok(identity)
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<String, Checked>> {
        lock(&self.checked)
    }

    /// What these scopes reach: every toolset without a mapping, else those of the scopes.
    fn bound(&self, scopes: &[String]) -> Bound {
        if self.options.scopes.is_empty() {
            return Bound::new(&["*"], false);
        }
        let toolsets: Vec<&str> = self
            .options
            .scopes
            .iter()
            .filter(|(scope, _)| scopes.contains(scope))
            .map(|(_, toolset)| toolset.as_str())
            .collect();
        Bound::new(&toolsets, false)
    }

    /// The scope that would open `toolset` to `caller`, if a mapping has one and the caller
    /// lacks it: what an `insufficient_scope` challenge names. Listed with the caller's own
    /// scopes, so a client asking for them keeps what it had.
    pub(crate) fn step_up(&self, caller: &Identity, toolset: &str) -> Option<String> {
        if caller.proof != Proof::OAuth || caller.bound.allows_toolset(toolset) {
            return None;
        }
        let needed = self
            .options
            .scopes
            .iter()
            .find(|(_, t)| t == toolset || t == "*")
            .map(|(scope, _)| scope.clone())?;
        let mut scopes: BTreeSet<&str> = caller.scopes.iter().map(String::as_str).collect();
        scopes.insert(&needed);
        Some(scopes.into_iter().collect::<Vec<_>>().join(" "))
    }

    /// The protected resource metadata (RFC 9728) of `resource`.
    pub(crate) fn metadata(&self, resource: &str) -> Value {
        let scopes: BTreeSet<&str> = self
            .options
            .scopes
            .iter()
            .map(|(s, _)| s.as_str())
            .collect();
        json!({
            "resource": resource,
            "authorization_servers": [self.options.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
        })
    }
}

/// The URL of the protected resource metadata of `resource` (RFC 9728 §3.1): the well-known
/// path inserted between its origin and its path.
pub(crate) fn metadata_url(resource: &str) -> String {
    match reqwest::Url::parse(resource) {
        Ok(url) => {
            let origin = url.origin().ascii_serialization();
            let path = url.path().trim_end_matches('/');
            format!("{origin}{WELL_KNOWN}{path}")
        }
        Err(_) => format!("{}{WELL_KNOWN}", resource.trim_end_matches('/')),
    }
}

/// Where the protected resource metadata is served.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(scopes: &[(&str, &str)]) -> OAuth {
        OAuth::new(OAuthOptions {
            issuer: "https://auth.example".into(),
            audience: None,
            scopes: scopes
                .iter()
                .map(|(s, t)| ((*s).to_owned(), (*t).to_owned()))
                .collect(),
            jwks_refresh: DEFAULT_JWKS_REFRESH,
        })
    }

    fn caller(oauth: &OAuth, scopes: &[&str]) -> Identity {
        let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
        Identity {
            name: "alice".into(),
            bound: oauth.bound(&scopes),
            scopes,
            proof: Proof::OAuth,
            claims: None,
        }
    }

    #[test]
    fn scopes_map_to_toolsets_and_name_the_step_up() {
        let server = oauth(&[
            ("bench", "benchmarks"),
            ("sand", "sandboxes"),
            ("admin", "*"),
        ]);
        let alice = caller(&server, &["bench", "other"]);
        assert!(alice.bound.allows_toolset("benchmarks"));
        assert!(!alice.bound.allows_toolset("sandboxes"));
        assert_eq!(server.step_up(&alice, "benchmarks"), None);
        assert_eq!(
            server.step_up(&alice, "sandboxes").as_deref(),
            Some("bench other sand")
        );
        assert!(caller(&server, &["admin"]).bound.allows_toolset("anything"));
        assert!(
            oauth(&[]).bound(&[]).allows_toolset("anything"),
            "no mapping, no bound"
        );
    }

    #[test]
    fn scope_entries_must_be_pairs() {
        assert_eq!(parse_scope(" c = * ").unwrap(), ("c".into(), "*".into()));
        assert!(
            parse_scope("a")
                .unwrap_err()
                .to_string()
                .contains("`a` is not `scope=toolset`")
        );
        assert!(parse_scope("=b").is_err());
    }

    #[test]
    fn the_metadata_url_inserts_the_well_known_path() {
        assert_eq!(
            metadata_url("https://mcp.example/mcp"),
            "https://mcp.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:4040/"),
            "http://127.0.0.1:4040/.well-known/oauth-protected-resource"
        );
    }
}
