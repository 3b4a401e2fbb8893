"""Spades SDK: game engine, generated gRPC/protobuf API, and client helpers."""

__version__ = "0.1.0"
