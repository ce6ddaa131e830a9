import ArgumentParser
import Foundation
import IAPConformance
import IAPModel
import IAPValidators

IAPCheck.main()
