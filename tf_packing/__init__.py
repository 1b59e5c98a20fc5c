"""Repack: packed training of several Keras models on one device, and pack-aware Hyperband.

Not implemented yet (see README's status line).
"""
