//! What several resource types share, below their folders: a type's folder never imports another type's folder
//! (a test in acceptance-tests/tests/workflows.rs holds every folder to it), so a fact two types need is decided
//! here once.
//! Each module is one such fact, named for what it is.
pub mod control_plane_key;
pub mod node_selector;
pub mod resource_slice;
pub mod virtual_node_wait;
