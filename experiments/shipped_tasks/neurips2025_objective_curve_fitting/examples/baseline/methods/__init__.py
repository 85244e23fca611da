from methods.MyMethod import MyMethod


def all_method_handlers():
    """Every method main.py can run, by the name given to -m."""
    return {"my_method": MyMethod}
