"""Pieces several systems use, owned by none of them: each imports neither Spark, TensorFlow nor a system.

* :mod:`.criteria`: completion criteria (``UNTIL ACC >= 0.9 WITHIN 60 SECONDS``), parsed once for Rotary's
  approximate queries and Rotary-DLT's Keras jobs;
* :mod:`.curves`: learning-curve fits and predictions, for SLAQ's loss predictor, HyperDrive and Rotary-DLT;
* :mod:`.utility`: VideoStorm's utility allocator, through which every arbiter hands out cores or slots.
"""
