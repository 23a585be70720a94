//! What a request without good credentials is answered: 401 (no credentials, or bad ones) or
//! 403 (a token without the scope a tool needs), each with the `WWW-Authenticate: Bearer`
//! challenge RFC 6750 gives, naming the protected resource metadata (RFC 9728) when OAuth is on.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A credential that is not good: unknown, malformed, expired, badly signed; the reason.
    Invalid(String),
    /// A good token without the scope the request needs (`insufficient_scope`): the scope.
    InsufficientScope(String),
}

/// A `Rejection` ready to answer: with the metadata URL to name, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Why.
    pub(crate) rejection: Rejection,
    /// The URL of the protected resource metadata, when OAuth is on.
    pub(crate) resource_metadata: Option<String>,
}

impl Rejection {
    /// Why, in a word: `missing`, `invalid` or `insufficient_scope`.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Invalid(_) => "invalid",
            Self::InsufficientScope(_) => "insufficient_scope",
        }
    }
}

impl Challenge {
    /// The `WWW-Authenticate` value.
    pub(crate) fn header(&self) -> String {
        let mut params = vec![r#"realm="mcp""#.to_owned()];
        match &self.rejection {
            Rejection::Missing => {}
            Rejection::Invalid(reason) => {
                params.push(r#"error="invalid_token""#.to_owned());
                params.push(format!(r#"error_description="{}""#, quoted(reason)));
            }
            Rejection::InsufficientScope(scope) => {
                params.push(r#"error="insufficient_scope""#.to_owned());
                params.push(format!(r#"scope="{}""#, quoted(scope)));
                params.push(format!(
                    r#"error_description="this needs the scope `{}`""#,
                    quoted(scope)
                ));
            }
        }
        if let Some(url) = &self.resource_metadata {
            params.push(format!(r#"resource_metadata="{}""#, quoted(url)));
        }
        format!("Bearer {}", params.join(", "))
    }
}

impl IntoResponse for Challenge {
    fn into_response(self) -> Response {
        let (status, error, description) = match &self.rejection {
            Rejection::Missing => (
                StatusCode::UNAUTHORIZED,
                "invalid_request",
                "this server needs credentials: send `Authorization: Bearer KEY` (an API key or \
                 an OAuth access token)"
                    .to_owned(),
            ),
            Rejection::Invalid(reason) => {
                (StatusCode::UNAUTHORIZED, "invalid_token", reason.clone())
            }
            Rejection::InsufficientScope(scope) => (
                StatusCode::FORBIDDEN,
                "insufficient_scope",
                format!("this needs the scope `{scope}`; ask the authorization server for it"),
            ),
        };
        let mut response = (
            status,
            axum::Json(json!({"error": error, "error_description": description})),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&self.header()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// `text` fit for a quoted-string: no quotes, backslashes or control characters.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_follow_rfc_6750_and_name_the_metadata() {
        let missing = Challenge {
            rejection: Rejection::Missing,
            resource_metadata: None,
        };
        assert_eq!(missing.header(), r#"Bearer realm="mcp""#);
        let expired = Challenge {
            rejection: Rejection::Invalid("the \"key\" expired".into()),
            resource_metadata: Some("http://h/.well-known/oauth-protected-resource/mcp".into()),
        };
        assert_eq!(
            expired.header(),
            r#"Bearer realm="mcp", error="invalid_token", error_description="the 'key' expired", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#
        );
        let step_up = Challenge {
            rejection: Rejection::InsufficientScope("tools:write".into()),
            resource_metadata: None,
        };
        assert!(
            step_up
                .header()
                .contains(r#"error="insufficient_scope", scope="tools:write""#)
        );
        assert_eq!(step_up.into_response().status(), StatusCode::FORBIDDEN);
    }
}
