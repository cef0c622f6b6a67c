-- A person's cordon or drain of a node (dcuctl cordon / drain / uncordon):
-- dcufleet.v1.NodeCordon, serialized protobuf; NULL when the node takes
-- replicas. Kept on the node's row, so a controller restart or a standby's
-- takeover keeps the node out of scheduling as it was.
ALTER TABLE nodes ADD COLUMN cordon BLOB;
