//! Realistic SKILL.md documents before and after edit sequences.
