//! Helpers shared by the integration tests: fixture loading and diff statistics.
