from methods.MyMethod import MyMethod
from methods.Reference import Reference


def all_method_handlers():
    return {"my_method": MyMethod, "reference": Reference}
