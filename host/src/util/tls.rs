//! The crypto provider of the host's TLS clients: rustls with ring, installed as the process's
//! default before the first client is built (reqwest, built without a provider of its own,
//! takes the process default). An application embedding the server that installed another
//! provider first keeps it.

use std::sync::Once;

/// Makes ring the process's rustls crypto provider, unless one is installed already.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_once_the_provider_is_installed() {
        super::install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        assert!(reqwest::Client::builder().build().is_ok());
    }
}
