//! One module per subcommand.
pub mod average;
pub mod baseline;
pub mod bench;
pub mod convert;
pub mod data;
pub mod eval;
pub mod plot;
pub mod prepare;
pub mod quantize;
pub mod quickstart;
pub mod score;
pub mod serve;
pub mod train;
pub mod translate;
pub mod tune;
