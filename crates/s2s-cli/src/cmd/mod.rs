//! One module per subcommand.
pub mod eval;
pub mod prepare;
pub mod quickstart;
pub mod train;
pub mod translate;
