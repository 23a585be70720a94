//! Log levels: rmcp's eight, numbered in the order of `plugin_api::LogLevel` (0 = debug), the
//! form a level crosses the plugin boundary and the isolation pipe in.

#![allow(deprecated)]

use rmcp::model::LoggingLevel;

/// rmcp's levels, in the order of `plugin_api::LogLevel`.
pub(crate) const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// The number of `level` in `plugin_api::LogLevel`'s order, 0 = debug.
pub(crate) fn level_number(level: LoggingLevel) -> u8 {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .and_then(|n| u8::try_from(n).ok())
        .unwrap_or(0)
}
