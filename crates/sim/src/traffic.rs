//! (being written: simulator core)
