"""Field-kind codecs: see base.py for the contract. ``codec_for(field)`` picks one."""

from .base import Codec, FieldSpec, ReadContext, ServiceHooks

__all__ = ["Codec", "FieldSpec", "ReadContext", "ServiceHooks"]
