from methods.MyMethod import MyMethod


def all_method_handlers():
    return {"my_method": MyMethod}
