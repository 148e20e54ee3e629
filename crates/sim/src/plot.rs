//! (being written: experiment runner)
