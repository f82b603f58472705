"""Pre-training: span masking (MLM) and leaf-group masking (MNM), the losses, the learning-rate
schedule, a resumable single/multi-process trainer, training checkpoints and metrics (DESIGN §6)."""

from graphmert.train.data import BatchPlan, DistContext, GraphDataset, split_by_document
from graphmert.train.losses import MaskedModelingObjective, TargetCounts, combine_losses
from graphmert.train.masking import MaskedBatch, MaskingCollator, MaskingSpec, mask_graph, span_length_pmf
from graphmert.train.schedule import CosineSchedule, lr_at
from graphmert.train.state import latest_checkpoint, load_training_state, save_training_checkpoint
from graphmert.train.trainer import Trainer, TrainingDiverged, TrainResult, build_optimizer

__all__ = [
    "BatchPlan", "DistContext", "GraphDataset", "split_by_document", "MaskedModelingObjective",
    "TargetCounts", "combine_losses", "MaskedBatch", "MaskingCollator", "MaskingSpec", "mask_graph",
    "span_length_pmf", "CosineSchedule", "lr_at", "latest_checkpoint", "load_training_state",
    "save_training_checkpoint", "Trainer", "TrainingDiverged", "TrainResult", "build_optimizer",
]
