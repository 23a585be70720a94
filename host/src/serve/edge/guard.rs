//! The guard every route sits behind.
//!
//! It protects a server on a developer's machine from DNS rebinding and from web pages:
//! the `Host` header must name the server (loopback names, the bound host, or an
//! `--allowed-host`), and a browser's `Origin`, when present, must be a loopback origin, the
//! server's own, or an `--allowed-origin`; otherwise the answer is 403. It guards every route,
//! which is why rmcp's own Host/Origin checks (which would cover `/mcp` only) are switched off.

use std::net::IpAddr;

use crate::util::loopback::{is_loopback, normalize_host};

use axum::{
    extract::Request,
    http::{HeaderMap, StatusCode, Uri, header, uri::Authority},
    response::{IntoResponse, Response},
};

/// Applies [`AccessPolicy`] to a request: `Ok` to go on, else the refusal (logged).
pub(crate) fn guard(policy: &AccessPolicy, request: &Request) -> Result<(), Refusal> {
    policy
        .check(request.uri(), request.headers())
        .inspect_err(|refusal| {
            tracing::warn!(
                host = ?request.headers().get(header::HOST),
                origin = ?request.headers().get(header::ORIGIN),
                "refused a request: {}",
                refusal.1
            );
        })
}

/// Which `Host` and `Origin` headers the server accepts.
#[derive(Debug, Clone, Default)]
pub(crate) struct AccessPolicy {
    hosts: Vec<HostRule>,
    any_host: bool,
    origins: Vec<OriginRule>,
    any_origin: bool,
}

/// A request the guard refuses: a status and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(StatusCode, &'static str);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum OriginRule {
    Null,
    Tuple {
        scheme: String,
        host: String,
        /// `None` for `:*`.
        port: Option<u16>,
    },
}

impl AccessPolicy {
    /// Loopback names, `bind_host`, and the extra hosts and origins given on the command line.
    /// An entry `*` accepts any host (or origin). Entries that do not parse are reported.
    pub(crate) fn new(
        bind_host: &str,
        allowed_hosts: &[String],
        allowed_origins: &[String],
    ) -> Self {
        let mut policy = Self::default();
        let defaults = ["localhost", "127.0.0.1", "::1", bind_host];
        for entry in defaults
            .into_iter()
            .chain(allowed_hosts.iter().map(String::as_str))
        {
            match entry.trim() {
                "*" => policy.any_host = true,
                "" => {}
                entry => match parse_host_rule(entry) {
                    Some(rule) if !is_wildcard_address(&rule.host) => policy.hosts.push(rule),
                    Some(_) => {}
                    None => tracing::warn!("--allowed-host `{entry}` is not a host name"),
                },
            }
        }
        for entry in allowed_origins {
            match entry.trim() {
                "*" => policy.any_origin = true,
                entry => match parse_origin_rule(entry) {
                    Some(rule) => policy.origins.push(rule),
                    None => tracing::warn!(
                        "--allowed-origin `{entry}` is not an origin (scheme://host[:port])"
                    ),
                },
            }
        }
        policy
    }

    /// Whether a request with this URI and these headers may go on.
    pub(crate) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        if headers.get_all(header::HOST).iter().nth(1).is_some() {
            return Err(Refusal(
                StatusCode::BAD_REQUEST,
                "Bad Request: more than one Host header",
            ));
        }
        let host = match headers.get(header::HOST) {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|v| Authority::try_from(v).ok())
                .map(|a| authority(&a))
                .ok_or(Refusal(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: invalid Host header",
                ))?,
            None => uri.authority().map(authority).ok_or(Refusal(
                StatusCode::BAD_REQUEST,
                "Bad Request: missing Host header",
            ))?,
        };
        if !self.host_allowed(&host) {
            return Err(Refusal(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().ok().and_then(parse_origin).ok_or(Refusal(
            StatusCode::FORBIDDEN,
            "Forbidden: invalid Origin header",
        ))?;
        if self.origin_allowed(&origin, &host) {
            Ok(())
        } else {
            Err(Refusal(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            ))
        }
    }

    fn host_allowed(&self, host: &HostRule) -> bool {
        self.any_host
            || self.hosts.iter().any(|rule| {
                rule.host == host.host && rule.port.is_none_or(|p| host.port == Some(p))
            })
    }

    fn origin_allowed(&self, origin: &OriginRule, host: &HostRule) -> bool {
        if self.any_origin || self.origins.contains(origin) {
            return true;
        }
        let OriginRule::Tuple {
            scheme,
            host: origin_host,
            port,
        } = origin
        else {
            return false;
        };
        let same_origin =
            *origin_host == host.host && *port == host.port.or_else(|| default_port(scheme));
        same_origin
            || is_loopback(origin_host)
            || self.origins.iter().any(|rule| match rule {
                OriginRule::Tuple {
                    scheme: s,
                    host: h,
                    port: None,
                } => s == scheme && h == origin_host,
                _ => false,
            })
    }
}

fn authority(authority: &Authority) -> HostRule {
    HostRule {
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    }
}

fn parse_host_rule(entry: &str) -> Option<HostRule> {
    // A bare IPv6 address (`::1`) is not an authority; it names a host without a port.
    if entry.matches(':').count() > 1 && !entry.starts_with('[') {
        return entry.parse::<IpAddr>().ok().map(|_| HostRule {
            host: normalize_host(entry),
            port: None,
        });
    }
    Authority::try_from(entry).ok().map(|a| authority(&a))
}

fn parse_origin(value: &str) -> Option<OriginRule> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(OriginRule::Null);
    }
    let uri = Uri::try_from(value).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let port = authority.port_u16().or_else(|| default_port(&scheme));
    Some(OriginRule::Tuple {
        host: normalize_host(authority.host()),
        scheme,
        port,
    })
}

fn parse_origin_rule(entry: &str) -> Option<OriginRule> {
    match entry.strip_suffix(":*") {
        Some(base) => match parse_origin(base)? {
            OriginRule::Tuple { scheme, host, .. } => Some(OriginRule::Tuple {
                scheme,
                host,
                port: None,
            }),
            OriginRule::Null => None,
        },
        None => parse_origin(entry),
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

fn is_wildcard_address(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn check(policy: &AccessPolicy, host: &str, origin: Option<&str>) -> Result<(), StatusCode> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        policy
            .check(&Uri::from_static("/mcp"), &headers)
            .map_err(|r| r.0)
    }

    fn default_policy() -> AccessPolicy {
        AccessPolicy::new("127.0.0.1", &[], &[])
    }

    #[test]
    fn loopback_hosts_are_accepted_on_any_port() {
        let p = default_policy();
        for host in ["127.0.0.1:4040", "localhost:1", "localhost", "[::1]:4040"] {
            assert_eq!(check(&p, host, None), Ok(()), "{host}");
        }
    }

    #[test]
    fn a_foreign_host_is_forbidden() {
        assert_eq!(
            check(&default_policy(), "evil.example:4040", None),
            Err(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn allowed_hosts_extend_the_defaults_and_may_pin_a_port() {
        let p = AccessPolicy::new(
            "0.0.0.0",
            &["mcp.example".into(), "other.example:8080".into()],
            &[],
        );
        assert_eq!(check(&p, "mcp.example:4040", None), Ok(()));
        assert_eq!(check(&p, "MCP.example", None), Ok(()));
        assert_eq!(check(&p, "other.example:8080", None), Ok(()));
        assert_eq!(
            check(&p, "other.example:8081", None),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(check(&p, "0.0.0.0:4040", None), Err(StatusCode::FORBIDDEN));
    }

    #[test]
    fn the_bound_host_is_allowed() {
        let p = AccessPolicy::new("10.1.2.3", &[], &[]);
        assert_eq!(check(&p, "10.1.2.3:4040", None), Ok(()));
        let p = AccessPolicy::new("::1", &[], &[]);
        assert_eq!(check(&p, "[::1]:4040", None), Ok(()));
    }

    #[test]
    fn a_star_accepts_any_host_or_origin() {
        let p = AccessPolicy::new("127.0.0.1", &["*".into()], &["*".into()]);
        assert_eq!(
            check(&p, "any.example", Some("https://evil.example")),
            Ok(())
        );
    }

    #[test]
    fn a_foreign_origin_is_forbidden() {
        assert_eq!(
            check(
                &default_policy(),
                "127.0.0.1:4040",
                Some("http://evil.example")
            ),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(&default_policy(), "127.0.0.1:4040", Some("null")),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(&default_policy(), "127.0.0.1:4040", Some("not an origin")),
            Err(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn loopback_and_same_origins_are_accepted() {
        let p = default_policy();
        assert_eq!(
            check(&p, "127.0.0.1:4040", Some("http://localhost:6274")),
            Ok(())
        );
        assert_eq!(
            check(&p, "127.0.0.1:4040", Some("http://127.0.0.1:4040")),
            Ok(())
        );
        let p = AccessPolicy::new("0.0.0.0", &["mcp.example".into()], &[]);
        assert_eq!(check(&p, "mcp.example", Some("http://mcp.example")), Ok(()));
        // Behind a TLS proxy the Host carries no port and the page's origin is https.
        assert_eq!(
            check(&p, "mcp.example", Some("https://mcp.example")),
            Ok(())
        );
        assert_eq!(
            check(&p, "mcp.example:4040", Some("https://mcp.example")),
            Err(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_port() {
        let p = AccessPolicy::new(
            "127.0.0.1",
            &[],
            &[
                "https://app.example".into(),
                "http://dev.example:*".into(),
                "null".into(),
            ],
        );
        let host = "127.0.0.1:4040";
        assert_eq!(check(&p, host, Some("https://app.example")), Ok(()));
        assert_eq!(check(&p, host, Some("https://app.example:443")), Ok(()));
        assert_eq!(
            check(&p, host, Some("https://app.example:8443")),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(&p, host, Some("http://app.example")),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(check(&p, host, Some("http://dev.example:3000")), Ok(()));
        assert_eq!(check(&p, host, Some("null")), Ok(()));
    }

    #[test]
    fn two_host_headers_are_a_bad_request_whatever_their_order() {
        for pair in [
            ["127.0.0.1:4040", "evil.example"],
            ["evil.example", "localhost"],
        ] {
            let mut headers = HeaderMap::new();
            for host in pair {
                headers.append(header::HOST, HeaderValue::from_static(host));
            }
            let refusal = default_policy()
                .check(&Uri::from_static("/mcp"), &headers)
                .unwrap_err();
            assert_eq!(refusal.0, StatusCode::BAD_REQUEST, "{pair:?}");
        }
    }

    #[test]
    fn a_request_without_origin_passes() {
        assert_eq!(check(&default_policy(), "localhost:4040", None), Ok(()));
    }
}
