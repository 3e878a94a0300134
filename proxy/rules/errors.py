"""The one error rules loading raises."""


class RulesError(Exception):
    """A rules directory that cannot be used, with a message naming file, rule and problem."""
