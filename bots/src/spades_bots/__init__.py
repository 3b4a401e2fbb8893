"""Spades bots: automated players that connect through the Spades SDK."""
