"""Evidence for the scaling advisor: TPC-H queries at several executor counts, each count predicted from the others."""
