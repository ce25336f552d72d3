"""Results of configurations chapter 4 no longer runs, kept beside the ones that replaced them.

The numbers earlier editions' committed full references recorded (each entry names the commit),
shown as they were, never recomputed. Intervals are ``(estimate, low, high)`` at the ``level``
given; ranks are MAE-LM's minus the MLM's entropy effective rank of clean real tokens at the last
layer, as a share of the width unless ``unit`` says otherwise.
"""
from __future__ import annotations

__all__ = ["EARLIER"]

EARLIER = {
    # the third edition's MLM/MAE-LM pair: hidden 128, 4,000 steps; MAE-LM's seed 1 failed
    "h128_three_seeds": {
        "commit": "974af5d", "width": 128, "seeds": 3, "steps": 4000,
        "gap_share": (-0.0711, -0.2737, 0.0881), "gap_share_level": 0.95,
        "gap_directions": (-9.07, -35.15, 11.41), "gap_directions_level": 0.9979,
        "maelm_final_loss": (1.918, 2.675, 1.907), "mlm_final_loss": (1.855, 1.851, 1.803),
    },
    # the fourth edition's knob: slopes per unit of [MASK] share, family level 99.79 %
    "knob_w32": {
        "commit": "5d78747", "width": 32, "steps": 800, "seeds": 3, "level": 0.9979,
        "shares": (0.12, 0.24, 0.36, 0.45, 0.48),
        "deficiency_slope": (-0.0521, -0.0991, 0.0175), "mask_adds_slope": (0.0146, 0.0066, 0.0219),
    },
    # the fourth edition's fair match, at the knob's width (share of the width, layer 2)
    "controls_w32": {
        "commit": "5d78747", "width": 32, "steps": 800, "seeds": 3, "level": 0.9979, "long_factor": 1.1,
        "fit_matched": (-0.0231, -0.0363, -0.0040), "depth_matched": (0.0216, 0.0067, 0.0382),
    },
    # the fourth edition's fine-tuning: 200 training sentences, 5 epochs
    "finetune_200": {
        "commit": "5d78747", "width": 64, "train": 200, "test": 300, "seeds": 3, "level": 0.95,
        "mlm": {"ordinary": (0.5833, 0.5167, 0.6600), "attractor": (0.5078, 0.4711, 0.5422)},
        "maelm": {"ordinary": (0.5111, 0.4756, 0.5445), "attractor": (0.5144, 0.4778, 0.5522)},
    },
}
"""Earlier editions' results, by the configuration they belong to (see the module docstring)."""
