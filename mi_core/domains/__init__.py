"""Domains: parsing, validation and tokenization of the sequences a model reads."""
