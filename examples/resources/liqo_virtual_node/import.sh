# Import ID: <tenant_namespace>/<name> (the VirtualNode on the consumer cluster). A VirtualNode Liqo made for a
# ResourceSlice (owned by it) belongs to its liqo_peer and is refused. labels reads every node label but Liqo's own
# liqo.io/remote-cluster-id; resource_slice_name comes from the label liqo.io/resourceslice-name.
terraform import liqo_virtual_node.gpu liqo-tenant-milan/milan-gpu
