"""``explore reproduce``: published figures regenerated, our numbers beside the paper's."""
