"""The rules. One module, one class each; discovered by `base.all_rules()`."""
