//! Who may call what over HTTP: API keys and OAuth 2.1 access tokens, each caller bounded to
//! its toolsets.
//!
//! - [`identity`]: the caller ([`Identity`]) and its [`Bound`], which narrows a request's
//!   selection as the operator's flags do.
//! - [`keys`]: the API keys file (TOML or JSON: name, SHA-256 of the key, toolsets, readonly,
//!   expiry) and finding a key in it in constant time; [`store`] re-reads it when it changes;
//!   [`admin`] is `reactor-mcp-server keys new|list`.
//! - [`oauth`]: the server as an OAuth 2.1 resource server: its metadata (RFC 9728), scopes
//!   mapped to toolsets, the step-up scope; [`jwt`] checks an access token with the issuer's keys,
//!   which [`jwks`] fetches and keeps.
//! - [`challenge`]: the 401 and 403 answers with their `WWW-Authenticate: Bearer` challenge.
//!
//! [`Authenticator`] puts them together for the front door (`crate::serve`): a request to a
//! route that needs credentials (every one but `/healthz` and the OAuth metadata) must carry
//! `Authorization: Bearer CREDENTIAL`. Stdio has no authentication: whoever starts the process
//! is its one client.

pub(crate) mod admin;
mod challenge;
pub(crate) mod identity;
pub(crate) mod jwks;
pub mod jwt;
pub(crate) mod keys;
pub(crate) mod oauth;
pub(crate) mod store;

use std::{path::PathBuf, sync::Arc};

use axum::http::{HeaderMap, header};

use crate::util::{
    error::{Report, chain},
    loopback::is_loopback,
};

pub use challenge::Challenge;
pub(crate) use challenge::Rejection;
pub(crate) use identity::{Bound, Proof, RequestIdentity};
pub use identity::{Identity, TokenClaims};

use keys::{KeysError, Lookup};
use oauth::{OAuth, OAuthOptions};
use store::KeyStore;

/// How callers authenticate: a plain value, from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthOptions {
    /// The API keys file (`--auth-keys`).
    pub keys_file: Option<PathBuf>,
    /// Serve a non-loopback address without authentication (`--allow-unauthenticated`).
    pub allow_unauthenticated: bool,
    /// Accept OAuth access tokens (`--oauth-issuer` and friends).
    pub oauth: Option<OAuthOptions>,
}

impl AuthOptions {
    /// Whether any authentication mode is on.
    pub(crate) fn is_on(&self) -> bool {
        self.keys_file.is_some() || self.oauth.is_some()
    }

    /// Refuses to serve `host`, a non-loopback address, without authentication, unless the
    /// operator said so; the error names the flags.
    pub(crate) fn check_host(&self, host: &str) -> Result<(), UnauthenticatedBind> {
        if self.is_on() || is_loopback(host) {
            return Ok(());
        }
        if self.allow_unauthenticated {
            tracing::warn!(
                "serving {host} WITHOUT AUTHENTICATION (--allow-unauthenticated): anyone who \
                 can reach it can call every tool"
            );
            return Ok(());
        }
        Err(UnauthenticatedBind {
            host: host.to_owned(),
        })
    }
}

/// A non-loopback address to be served without authentication, which the operator did not
/// allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to serve {host}, which is not a loopback address, without authentication: give \
     --auth-keys FILE (API keys; REACTOR_MCP_AUTH_KEYS) or --oauth-issuer URL (OAuth access \
     tokens; REACTOR_MCP_OAUTH_ISSUER), or --allow-unauthenticated to serve it open anyway"
)]
pub(crate) struct UnauthenticatedBind {
    /// The address.
    host: String,
}

/// Checks the credentials of requests.
#[derive(Debug)]
pub struct Authenticator {
    keys: Option<Arc<KeyStore>>,
    oauth: Option<OAuth>,
    /// The MCP endpoint's path, the default resource's.
    mcp_path: String,
}

impl Authenticator {
    /// The authenticator `options` describe for the endpoint at `mcp_path`; `None` when
    /// authentication is off. The error is a [`Report`]: `serve` shows it as one line.
    pub fn new(options: &AuthOptions, mcp_path: &str) -> Result<Option<Self>, Report<KeysError>> {
        if !options.is_on() {
            return Ok(None);
        }
        let keys = options
            .keys_file
            .as_deref()
            .map(KeyStore::open)
            .transpose()?
            .map(Arc::new);
        Ok(Some(Self {
            keys,
            oauth: options.oauth.clone().map(OAuth::new),
            mcp_path: mcp_path.to_owned(),
        }))
    }

    /// The keys file, to watch.
    pub(crate) fn key_store(&self) -> Option<&Arc<KeyStore>> {
        self.keys.as_ref()
    }

    /// The resource server, when OAuth is on.
    pub(crate) fn oauth(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    /// This server's resource identifier for a request with these headers: `--oauth-audience`,
    /// else the MCP endpoint's URL at the request's `Host` (which the front door checked).
    pub(crate) fn resource(&self, headers: &HeaderMap) -> String {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        let default = format!("http://{host}{}", self.mcp_path);
        match &self.oauth {
            Some(oauth) => oauth.resource(&default).to_owned(),
            None => default,
        }
    }

    /// The caller of a request with these headers, or the challenge refusing it.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Identity>, Challenge> {
        let resource = self.oauth.as_ref().map(|_| self.resource(headers));
        let challenge = |rejection: Rejection| {
            crate::observe::metrics::auth_failure(rejection.reason());
            Challenge {
                rejection,
                resource_metadata: resource.as_deref().map(oauth::metadata_url),
            }
        };
        let token = bearer(headers).map_err(challenge)?;
        if let Some(store) = &self.keys {
            match store.keys().find(token, keys::now()) {
                Lookup::Valid(entry) => return Ok(entry.identity()),
                Lookup::Expired(entry) => {
                    let (_, when) = entry.expires.clone().unwrap_or_default();
                    return Err(challenge(Rejection::Invalid(format!(
                        "the API key `{}` expired at {when}",
                        entry.name()
                    ))));
                }
                Lookup::Unknown => {}
            }
        }
        match (&self.oauth, &resource) {
            (Some(oauth), Some(resource)) if token.contains('.') || self.keys.is_none() => oauth
                .identify(token, resource)
                .await
                .map_err(|error| challenge(Rejection::Invalid(chain(&error)))),
            _ => Err(challenge(Rejection::Invalid(
                "the bearer token is not a known API key".to_owned(),
            ))),
        }
    }

    /// The `insufficient_scope` challenge for `caller` calling a tool of `toolset` it lacks
    /// the scope for, when a scope would open it.
    pub(crate) fn step_up(
        &self,
        headers: &HeaderMap,
        caller: &Identity,
        toolset: &str,
    ) -> Option<Challenge> {
        let scope = self.oauth.as_ref()?.step_up(caller, toolset)?;
        crate::observe::metrics::auth_failure("insufficient_scope");
        Some(Challenge {
            rejection: Rejection::InsufficientScope(scope),
            resource_metadata: Some(oauth::metadata_url(&self.resource(headers))),
        })
    }
}

/// The token of the request's one `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Result<&str, Rejection> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Rejection::Missing);
    };
    if values.next().is_some() {
        return Err(Rejection::Invalid(
            "more than one Authorization header".to_owned(),
        ));
    }
    let value = value
        .to_str()
        .map_err(|_| Rejection::Invalid("the Authorization header is not text".to_owned()))?;
    match value.trim().split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(Rejection::Invalid(
            "the Authorization header is not `Bearer TOKEN`".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_loopback_bind_needs_auth_or_the_explicit_way_out() {
        let off = AuthOptions::default();
        for host in ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"] {
            assert_eq!(off.check_host(host), Ok(()), "{host}");
        }
        for host in ["0.0.0.0", "::", "10.0.0.1", "example.org"] {
            let error = off.check_host(host).unwrap_err().to_string();
            assert!(
                error.contains("--auth-keys FILE")
                    && error.contains("--oauth-issuer URL")
                    && error.contains("--allow-unauthenticated"),
                "{error}"
            );
        }
        let open = AuthOptions {
            allow_unauthenticated: true,
            ..AuthOptions::default()
        };
        assert_eq!(open.check_host("0.0.0.0"), Ok(()));
        let keys = AuthOptions {
            keys_file: Some("k.toml".into()),
            ..AuthOptions::default()
        };
        assert_eq!(keys.check_host("0.0.0.0"), Ok(()));
        let oauth = AuthOptions {
            oauth: Some(OAuthOptions {
                issuer: "https://auth.example".into(),
                audience: None,
                scopes: Vec::new(),
                jwks_refresh: crate::auth::oauth::DEFAULT_JWKS_REFRESH,
            }),
            ..AuthOptions::default()
        };
        assert_eq!(oauth.check_host("0.0.0.0"), Ok(()));
    }

    #[test]
    fn the_bearer_token_is_read_from_one_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), Err(Rejection::Missing));
        headers.insert(header::AUTHORIZATION, "bearer  abc ".parse().unwrap());
        assert_eq!(bearer(&headers), Ok("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert!(matches!(bearer(&headers), Err(Rejection::Invalid(_))));
        headers.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert!(matches!(bearer(&headers), Err(Rejection::Invalid(_))));
        headers.insert(header::AUTHORIZATION, "Bearer a".parse().unwrap());
        headers.append(header::AUTHORIZATION, "Bearer b".parse().unwrap());
        assert!(matches!(bearer(&headers), Err(Rejection::Invalid(_))));
    }
}
