//! Whether a host is loopback: the one test the HTTP guard, authentication and the listener
//! share, so `[::1]`, `::1`, `LOCALHOST.` and `app.localhost` are judged alike everywhere.

use std::net::IpAddr;

/// `host` without IPv6 brackets, a trailing dot, surrounding spaces or upper case: the form
/// hosts are compared in.
pub(crate) fn normalize_host(host: &str) -> String {
    unbracketed(host.trim())
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// `host` without the brackets of an IPv6 literal (`[::1]` -> `::1`).
pub(crate) fn unbracketed(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Whether `host` (a name or an address, IPv6 bracketed or not, any case) is loopback:
/// `localhost`, a `*.localhost` name, or a loopback address.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = normalize_host(host);
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_in_any_spelling() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "app.localhost",
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "[::1]",
            " [::1] ",
        ] {
            assert!(is_loopback(host), "{host}");
        }
    }

    #[test]
    fn other_hosts_are_not_loopback() {
        for host in [
            "example.com",
            "localhost.example",
            "10.0.0.1",
            "::",
            "[2001:db8::1]",
            "",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
