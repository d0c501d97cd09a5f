//! ndpdb's experiments. Each experiment is a function from a configuration to
//! rows; `output` turns rows into a terminal table, JSON lines and plots in a
//! results directory. Baselines and plotting live here, away from the engine,
//! so ordinary builds of the engine stay small.
//!
//! Each experiment's configuration checks itself (`validate`) and runs end
//! to end as its command does (`run_and_report`): a scratch image, a
//! progress bar, the table and JSON lines, the results directory, all
//! through `report`, the one results writer; `console` is the commands'
//! standard output, and `late` says whether a run's times measure the
//! modelled device or the emulator. The `ndpdb` binary only parses arguments into these
//! configurations.

pub mod cbm;
pub mod compose;
pub mod console;
pub mod crash;
pub mod device_scaling;
pub mod hardware_model;
pub mod late;
pub mod limits;
pub mod locks;
pub mod locks_report;
pub mod machine;
pub mod orderline;
pub mod output;
pub mod recovery;
pub mod report;
pub mod snapshot;
